import Foundation
@testable import Outbox
import OutboxAudit
import Testing

@Suite("The worker's state machine")
struct WorkerStateMachineTests {
    let t0 = Date(timeIntervalSinceReferenceDate: 800_000_000)

    @Test func overlappingWakesCollapseIntoOneMorePass() {
        var machine = WorkerStateMachine()
        #expect(machine.wake(.appLaunch) == [.startPass(.appLaunch)])
        #expect(machine.wake(.foreground) == [])
        #expect(machine.wake(.connectivityRegained) == [])
        #expect(machine.passFinished(nextDue: nil) == [.startPass(.foreground)])
        #expect(machine.passFinished(nextDue: nil) == [])
        #expect(!machine.isPassRunning)
    }

    @Test func aDrainWaitsForAPassThatStartsAfterIt() {
        var machine = WorkerStateMachine()
        #expect(machine.wake(.appLaunch) == [.startPass(.appLaunch)])
        #expect(machine.drain(waiter: 1) == [])
        // The pass running at the call is not enough.
        #expect(machine.passFinished(nextDue: nil) == [.startPass(.drain)])
        #expect(machine.passFinished(nextDue: nil) == [.resumeDrainers([1])])
    }

    @Test func aDrainWhenIdleRunsAPassAtOnce() {
        var machine = WorkerStateMachine()
        #expect(machine.drain(waiter: 7) == [.startPass(.drain)])
        #expect(machine.drain(waiter: 8) == [])
        // The next pass starts before the callers of this one resume.
        #expect(machine.passFinished(nextDue: nil) == [.startPass(.drain), .resumeDrainers([7])])
        #expect(machine.passFinished(nextDue: nil) == [.resumeDrainers([8])])
    }

    /// A caller that reads `nextWake` as `drain()` returns reads the timer the pass armed.
    @Test func theTimerIsArmedBeforeTheDrainCallersResume() {
        var machine = WorkerStateMachine()
        let due = t0.addingTimeInterval(4)
        #expect(machine.drain(waiter: 1) == [.startPass(.drain)])
        #expect(machine.passFinished(nextDue: due) == [.armTimer(due, .timer), .resumeDrainers([1])])
    }

    /// A wake that lands mid-pass runs one more pass at once, with no timer armed meanwhile;
    /// `nextWake` still says when the finished pass left work for, until that pass says anew.
    @Test func theNextWorkStaysWhileAPassAskedForMidPassRuns() {
        var machine = WorkerStateMachine()
        let due = t0.addingTimeInterval(30)
        #expect(machine.drain(waiter: 1) == [.startPass(.drain)])
        #expect(machine.wake(.appLaunch) == [])
        #expect(machine.passFinished(nextDue: due) == [.startPass(.appLaunch), .resumeDrainers([1])])
        #expect(machine.timerDeadline == nil, "no timer runs while the pass after it does")
        #expect(machine.nextWork == due)
        let sooner = t0.addingTimeInterval(5)
        #expect(machine.becameDue(at: sooner, because: .enqueued) == [])
        #expect(machine.nextWork == sooner, "an enqueue meanwhile makes it sooner")
        #expect(machine.passFinished(nextDue: due) == [.startPass(.enqueued)])
        #expect(machine.passFinished(nextDue: nil) == [])
        #expect(machine.nextWork == nil, "the last pass left nothing scheduled")
        _ = machine.close()
        #expect(machine.nextWork == nil)
    }

    /// A row made due while a pass runs (after it read its schedule) is not lost from the next
    /// work by what the pass says when it ends.
    @Test func aRowMadeDueDuringAPassStaysInTheNextWork() {
        var machine = WorkerStateMachine()
        #expect(machine.drain(waiter: 1) == [.startPass(.drain)])
        let soon = t0.addingTimeInterval(1)
        #expect(machine.becameDue(at: soon, because: .enqueued) == [])
        _ = machine.passFinished(nextDue: nil)
        #expect(machine.nextWork == soon, "the pass's own schedule did not hold it")
        _ = machine.passFinished(nextDue: nil)
        #expect(machine.nextWork == nil)
    }

    @Test func theTimerIsArmedAfterAPassAndFiresAPass() {
        var machine = WorkerStateMachine()
        _ = machine.wake(.appLaunch)
        let due = t0.addingTimeInterval(2)
        #expect(machine.passFinished(nextDue: due) == [.armTimer(due, .timer)])
        #expect(machine.timerDeadline == due)
        #expect(machine.timerFired(deadline: t0) == [], "a stale timer is ignored")
        #expect(machine.timerFired(deadline: due) == [.startPass(.timer)])
        #expect(machine.passFinished(nextDue: nil) == [])
        #expect(machine.timerDeadline == nil)
    }

    @Test func somethingDueSoonerReArmsTheTimer() {
        var machine = WorkerStateMachine()
        _ = machine.wake(.appLaunch)
        let later = t0.addingTimeInterval(300)
        _ = machine.passFinished(nextDue: later)
        #expect(machine.becameDue(at: t0, because: .enqueued) == [.armTimer(t0, .enqueued)])
        #expect(machine.becameDue(at: later, because: .enqueued) == [], "not sooner")
        #expect(machine.timerFired(deadline: t0) == [.startPass(.enqueued)])
    }

    @Test func nothingIsSentOnItsOwnBeforeTheFirstWake() {
        var machine = WorkerStateMachine()
        #expect(machine.becameDue(at: t0, because: .enqueued) == [])
        #expect(!machine.isStarted)
    }

    @Test func somethingDueDuringAPassAsksForAnotherPass() {
        var machine = WorkerStateMachine()
        _ = machine.wake(.appLaunch)
        #expect(machine.becameDue(at: t0, because: .retryRequested) == [])
        #expect(machine.passFinished(nextDue: nil) == [.startPass(.retryRequested)])
    }

    @Test func closingReleasesDrainersAndStopsTheTimer() {
        var machine = WorkerStateMachine()
        _ = machine.wake(.appLaunch)
        _ = machine.drain(waiter: 3)
        #expect(machine.close() == [.resumeDrainers([3])])
        #expect(machine.wake(.foreground) == [])
        #expect(machine.drain(waiter: 4) == [.resumeDrainers([4])])
        #expect(machine.passFinished(nextDue: t0) == [])
    }

    @Test func aPullWhenIdleRunsAPullingPassAtOnce() {
        var machine = WorkerStateMachine()
        #expect(machine.requestPull(waiter: 1) == [.startPass(.pullRequested)])
        #expect(machine.isStarted, "a pull starts the worker as a drain does")
        #expect(machine.passFinished(nextDue: nil) == [.resumeDrainers([1])])
    }

    @Test func aPullDuringAPassWaitsForAPullingPassAfterIt() {
        var machine = WorkerStateMachine()
        #expect(machine.wake(.timer) == [.startPass(.timer)])
        #expect(machine.becameDue(at: t0, because: .enqueued) == [])
        #expect(machine.requestPull(waiter: 5) == [], "single flight")
        // The pass asked for by the enqueue becomes the pull's: a pull asked for is never lost.
        #expect(machine.passFinished(nextDue: nil) == [.startPass(.pullRequested)])
        #expect(machine.passFinished(nextDue: nil) == [.resumeDrainers([5])])
    }

    @Test func aWakeThatPullsReplacesAPendingPassThatWouldNotAndNeverTheOtherWay() {
        var machine = WorkerStateMachine()
        _ = machine.wake(.appLaunch)
        _ = machine.becameDue(at: t0, because: .retryRequested)
        #expect(machine.wake(.foreground) == [])
        #expect(machine.passFinished(nextDue: nil) == [.startPass(.foreground)])
        #expect(machine.wake(.connectivityRegained) == [])
        #expect(machine.becameDue(at: t0, because: .enqueued) == [])
        _ = machine.requestPull(waiter: 2)
        #expect(machine.passFinished(nextDue: nil) == [.startPass(.connectivityRegained)], "the first pulling reason stays")
        #expect(machine.passFinished(nextDue: nil) == [.resumeDrainers([2])])
    }

    @Test func aPullAndADrainWaitingTogetherShareOnePullingPass() {
        var machine = WorkerStateMachine()
        _ = machine.wake(.appLaunch)
        _ = machine.drain(waiter: 1)
        _ = machine.requestPull(waiter: 2)
        #expect(machine.passFinished(nextDue: nil) == [.startPass(.pullRequested)], "a drain waits for any pass; the pull for one that pulls")
        #expect(machine.passFinished(nextDue: nil) == [.resumeDrainers([1, 2])])
    }

    @Test func aPullAfterCloseIsReleasedAtOnce() {
        var machine = WorkerStateMachine()
        _ = machine.requestPull(waiter: 1)
        #expect(machine.close() == [.resumeDrainers([1])])
        #expect(machine.requestPull(waiter: 2) == [.resumeDrainers([2])])
    }
}

@Suite("A pass's plan")
struct PassPlanTests {
    func candidate(_ seq: UInt64, lane: String) -> PassPlan.Candidate {
        PassPlan.Candidate(id: OperationID(), lane: self.lane(lane), firstSeq: JournalSequence(rawValue: seq))
    }

    /// Entity `name`'s lane in one business.
    func lane(_ name: String) -> Lane { Lane(businessID: "pharmacy-7", entityID: name, operation: OperationID()) }

    @Test func rowsComeInJournalOrderOneAtATimePerLane() {
        var plan = PassPlan()
        let a1 = candidate(1, lane: "a"), b2 = candidate(2, lane: "b"), a3 = candidate(3, lane: "a"), c4 = candidate(4, lane: "c")
        plan.add([c4, a3, b2, a1])
        #expect(plan.next() == a1)
        #expect(plan.next() == b2)
        #expect(plan.next() == c4, "lane a is busy: its second row waits")
        #expect(plan.next() == nil)
        plan.finished(lane: lane("a"))
        #expect(plan.next() == a3)
        #expect(plan.next() == nil)
    }

    @Test func aRowIsOfferedOncePerPass() {
        var plan = PassPlan()
        let row = candidate(1, lane: "a")
        plan.add([row])
        #expect(plan.next() == row)
        plan.finished(lane: lane("a"))
        plan.add([row])
        #expect(plan.next() == nil)
        #expect(plan.seen.count == 1)
    }

    @Test func aDroppedLaneOffersNothingMore() {
        var plan = PassPlan()
        let a1 = candidate(1, lane: "a"), a2 = candidate(2, lane: "a"), b3 = candidate(3, lane: "b")
        plan.add([a1, a2, b3])
        #expect(plan.next() == a1)
        plan.dropLane(lane("a"))
        #expect(plan.next() == b3)
        plan.finished(lane: lane("b"))
        #expect(plan.next() == nil)
        #expect(plan.isEmpty)
    }
}

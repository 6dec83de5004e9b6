// journal-inspect: the support engineer's tool. The logic lives in the JournalInspect library.
import Foundation
import JournalInspect

exit(JournalInspect.main(Array(CommandLine.arguments.dropFirst())))

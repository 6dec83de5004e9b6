import Foundation

/// The records of one business of several types, as scenario 14.5's server holds them: a
/// pharmacy's products, its staff and the stock movements of its products, created in one order
/// in which each stock movement comes after the product it names (the test server refuses a
/// movement of a product it does not hold). About 300 bytes of JSON each as served.
///
/// Of every ten records four are products, one an employee and five stock movements.
enum BusinessFeed {
    /// A record to create: the `POST /sync/batch` operation's type and endpoint, and its payload.
    struct Create {
        var type: String
        var operationType: String
        var endpoint: String
        var payload: Data
    }

    static let types = [Workload.productType, "employee", "stock_movement"]

    /// The `number`th record's type.
    static func type(of number: Int) -> String {
        switch number % 10 {
        case 0..<4: Workload.productType
        case 4: "employee"
        default: "stock_movement"
        }
    }

    /// How many records of each type the first `records` hold.
    static func counts(records: Int) -> [String: Int] {
        var counts = Dictionary(uniqueKeysWithValues: types.map { ($0, 0) })
        let whole = records / 10
        counts[Workload.productType]! += whole * 4
        counts["employee"]! += whole
        counts["stock_movement"]! += whole * 5
        for number in whole * 10..<records { counts[type(of: number), default: 0] += 1 }
        return counts
    }

    /// The `number`th record's create.
    static func create(_ number: Int) -> Create {
        switch type(of: number) {
        case Workload.productType:
            Create(type: Workload.productType, operationType: "product.create", endpoint: "/products", payload: PullFeed.product(number))
        case "employee":
            Create(type: "employee", operationType: "employee.create", endpoint: "/employees", payload: employee(number))
        default:
            Create(type: "stock_movement", operationType: "stock_movement.create", endpoint: "/stock-movements", payload: stockMovement(number))
        }
    }

    /// An employee: 280 to 300 bytes of JSON.
    static func employee(_ number: Int) -> Data {
        let names = ["Ana Ribeiro", "Tomasz Nowak", "Ines Duarte", "Mehmet Kaya", "Claire Dubois", "Jonas Berg"]
        let roles = ["Pharmacist", "Pharmacy technician", "Cashier", "Store manager"]
        let name = names[number % names.count]
        let json = """
            {"id":"\(Workload.stableID(number))","name":"\(name)","role":"\(roles[number % roles.count])",\
            "email":"staff\(number)@pharmacy-7.example","phone":"+351 21 \(1_000_000 + number % 9_000_000)",\
            "store":"Lisbon #\(number % 40)","shift":"\(number % 2 == 0 ? "morning" : "evening")",\
            "hired":"20\(10 + number % 15)-0\(1 + number % 9)-1\(number % 10)","active":true}
            """
        return Data(json.utf8)
    }

    /// A stock movement of a product created before it (the product of the same ten, or of
    /// the ten before): 290 to 320 bytes of JSON.
    static func stockMovement(_ number: Int) -> Data {
        let product = number / 10 * 10 + number % 4
        let kinds = ["receipt", "sale", "return", "adjustment", "transfer"]
        let json = """
            {"id":"\(Workload.stableID(number))","product_id":"\(Workload.stableID(product))",\
            "kind":"\(kinds[number % kinds.count])","quantity":\(1 + number % 48),"unit":"bottle",\
            "lot":"LOT-\(200_000 + number % 90_000)","expires":"202\(6 + number % 4)-0\(1 + number % 9)-28",\
            "location":"Shelf \(["A", "B", "C", "D"][number % 4])\(number % 12)","reference":"PO-\(number / 7)",\
            "by":"\(Workload.stableID(number / 10 * 10 + 4))","at":"2025-0\(1 + number % 9)-1\(number % 10)T10:\(10 + number % 50):00Z"}
            """
        return Data(json.utf8)
    }
}

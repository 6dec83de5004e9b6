package import OutboxWire

/// A string compared byte for byte: the key of every dictionary and set whose keys the journal
/// also keeps (see `OutboxWire.ExactString`). The app's maps are keyed by `String`; the engine
/// keeps them by their exact bytes, so two spellings that read alike (a composed and a decomposed
/// "é") are two types, never one.
package typealias ExactString = OutboxWire.ExactString

extension Dictionary where Key == String {
    /// The same entries keyed by their exact bytes: a `String` key's bytes are the ones it was
    /// written with, and two keys a dictionary holds apart differ in their bytes.
    package var byExactBytes: [ExactString: Value] {
        Dictionary<ExactString, Value>(uniqueKeysWithValues: map { (ExactString($0.key), $0.value) })
    }
}

extension Dictionary where Key == ExactString {
    /// The same entries keyed as the app writes them; keys whose bytes differ but read alike as
    /// strings are merged with `combine`.
    package func byString(combining combine: (Value, Value) -> Value) -> [String: Value] {
        Dictionary<String, Value>(map { ($0.key.string, $0.value) }, uniquingKeysWith: combine)
    }
}

public import OutboxWire

/// A string compared byte for byte: the key of every dictionary and set whose keys the journal
/// also keeps (see `OutboxWire.ExactString`). Named here so that `import Outbox` shows it.
public typealias ExactString = OutboxWire.ExactString

extension String {
    /// The string followed by spaces up to `width` characters (longer strings are kept whole):
    /// the columns of the tools' tables, without Foundation.
    package func padded(to width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - count))
    }
}

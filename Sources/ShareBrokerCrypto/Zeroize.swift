import CSodium

/// Zeroing of transient buffers that held key bytes.
public enum Zeroize {
    /// Overwrites every byte of `bytes` with zero, in place (`sodium_memzero`, which the optimizer keeps), then empties it.
    public static func zero(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            sodium_memzero(raw.baseAddress, raw.count)
        }
        bytes.removeAll()
    }
}

/// The file a blocked target receives instead of the document.
///
/// Its name is `withheld-<32 random hex digits>.sbwithheld`: no app registers that extension, so
/// no app opens it as the original type; it holds no part of the original name. Its content is
/// empty: zero bytes cannot carry any byte of the original, nor reveal its size.
package enum DummyFile {
    /// The extension of every dummy; no app opens it.
    package static let fileExtension = "sbwithheld"

    private static let prefix: StaticString = "withheld-"
    private static let hexDigits: StaticString = "0123456789abcdef"

    /// A fresh mangled name: one 128-bit random value in hex. Builds the name in place (one allocation).
    package static func mangledName() -> String {
        var rng = SystemRandomNumberGenerator()
        let random = (rng.next() as UInt64, rng.next() as UInt64)
        let ext = fileExtension.utf8
        let length = prefix.utf8CodeUnitCount + 32 + 1 + ext.count
        return String(unsafeUninitializedCapacity: length) { buffer in
            var at = 0
            prefix.withUTF8Buffer { p in
                for byte in p { buffer[at] = byte; at += 1 }
            }
            hexDigits.withUTF8Buffer { hex in
                func put(_ value: UInt64) {
                    var word = value
                    for _ in 0..<16 {
                        buffer[at] = hex[Int(word & 0xF)]
                        word >>= 4
                        at += 1
                    }
                }
                put(random.0)
                put(random.1)
            }
            buffer[at] = UInt8(ascii: ".")
            at += 1
            for byte in ext { buffer[at] = byte; at += 1 }
            return at
        }
    }

    /// The dummy's content: always empty.
    package static let contents: [UInt8] = []
}

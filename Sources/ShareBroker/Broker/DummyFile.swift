/// The file a blocked target receives instead of the document.
///
/// Its name is `withheld-<32 random hex digits>.sbwithheld`: no app registers that extension, so
/// no app opens it as the original type; it holds no part of the original name. Its content is
/// empty: zero bytes cannot carry any byte of the original, nor reveal its size.
public enum DummyFile {
    /// The extension of every dummy; no app opens it.
    public static let fileExtension = "sbwithheld"

    /// A fresh mangled name.
    public static func mangledName() -> String {
        var rng = SystemRandomNumberGenerator()
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var name = [UInt8]("withheld-".utf8)
        name.reserveCapacity(9 + 32 + 1 + fileExtension.utf8.count)
        for _ in 0..<2 {
            var word = rng.next() as UInt64
            for _ in 0..<16 {
                name.append(hex[Int(word & 0xF)])
                word >>= 4
            }
        }
        name.append(UInt8(ascii: "."))
        name.append(contentsOf: fileExtension.utf8)
        return String(decoding: name, as: UTF8.self)
    }

    /// The dummy's content: always empty.
    public static let contents: [UInt8] = []
}

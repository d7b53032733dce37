import Foundation
import Testing

/// The layout's rules (docs/ARCHITECTURE.md, "Modules"), checked on the sources themselves so a
/// change that breaks one fails here rather than in review.
@Suite("Module boundaries")
struct ModuleBoundaryTests {
    /// The package root, from this file's path (Tests/ShareBrokerTests/Architecture/...).
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Every `import` line of every Swift file under `folder` (relative to the root), as
    /// (file, imported module).
    static func imports(under folder: String) throws -> [(file: String, module: String)] {
        let base = root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else {
            throw CocoaError(.fileReadNoSuchFile)
        }
        var found: [(String, String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ").map(String.init)
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count else { continue }
                // `import X`, `@testable import X`, `package import X`, `@preconcurrency import X`...
                let before = words[..<index]
                guard before.allSatisfy({ $0.hasPrefix("@") || ["public", "package", "internal"].contains($0) })
                else { continue }
                let relative = String(url.path.dropFirst(root.path.count + 1))
                found.append((relative, words[index + 1]))
            }
        }
        return found
    }

    @Test("The portable core imports neither Foundation nor libsodium, nor any adapter, tool or test module")
    func coreStaysPortable() throws {
        let forbidden: Set<String> = [
            "Foundation", "FoundationEssentials", "CSodium", "COpenSSL", "ShareBrokerTesting", "ShareBrokerLinux",
            "ShareBrokerAgent", "ShareBrokerAgentClient", "ShareBrokerAgentProtocol", "ShareBrokerSimulator",
            "ShareBrokerPolicyDocument", "CGIO", "CXCB",
        ]
        let imports = try Self.imports(under: "Sources/ShareBroker")
        #expect(!imports.isEmpty, "no sources found under Sources/ShareBroker: the root is wrong")
        let offending = imports.filter { forbidden.contains($0.module) }
        #expect(offending.isEmpty, "the core must stay portable: \(offending)")
    }

    @Test("Only ShareBrokerCrypto imports libsodium or OpenSSL", arguments: ["CSodium", "COpenSSL"])
    func onlyCryptoImportsCryptoLibraries(module: String) throws {
        let offending = try Self.imports(under: "Sources")
            .filter { $0.module == module && !$0.file.hasPrefix("Sources/ShareBrokerCrypto/") }
        #expect(offending.isEmpty, "\(module) belongs to ShareBrokerCrypto: \(offending)")
        let crypto = try Self.imports(under: "Sources/ShareBrokerCrypto").filter { $0.module == module }
        #expect(!crypto.isEmpty, "ShareBrokerCrypto is expected to import \(module)")
    }

    @Test("Only ShareBrokerInterpose imports the GOT hooks (CShareBrokerInterpose)")
    func onlyInterposeImportsTheHooks() throws {
        let offending = try Self.imports(under: "Sources")
            .filter { $0.module == "CShareBrokerInterpose" && !$0.file.hasPrefix("Sources/ShareBrokerInterpose/") }
        #expect(offending.isEmpty, "the GOT hooks belong to ShareBrokerInterpose: \(offending)")
        let own = try Self.imports(under: "Sources/ShareBrokerInterpose").filter { $0.module == "CShareBrokerInterpose" }
        #expect(!own.isEmpty, "ShareBrokerInterpose is expected to import CShareBrokerInterpose")
    }

    @Test("Shipped modules never link the test doubles")
    func shippedModulesDoNotUseTestDoubles() throws {
        for folder in ["Sources/ShareBroker", "Sources/ShareBrokerCrypto", "Sources/ShareBrokerLinux",
                       "Sources/ShareBrokerAgent", "Sources/ShareBrokerAgentClient",
                       "Sources/ShareBrokerAgentProtocol", "Sources/ShareBrokerInterpose", "Sources/sharebrokerd"] {
            let offending = try Self.imports(under: folder).filter { $0.module == "ShareBrokerTesting" }
            #expect(offending.isEmpty, "\(folder) imports the test doubles: \(offending)")
        }
    }

    @Test("The crypto module depends on nothing of ours")
    func cryptoIsTheBottom() throws {
        let ours = try Self.imports(under: "Sources/ShareBrokerCrypto")
            .filter { $0.module.hasPrefix("ShareBroker") }
        #expect(ours.isEmpty, "ShareBrokerCrypto must not import the rest of the package: \(ours)")
    }

    /// The modules linked into libsharebroker.so (Package.swift, ShareBrokerC and its
    /// dependencies): an app that loads the C library must not carry Foundation and its 40 MB of
    /// ICU data (issue 30; `make deb-check` checks the built library's NEEDED entries too).
    static let cLibraryClosure = [
        "ShareBrokerC", "ShareBroker", "ShareBrokerCrypto", "ShareBrokerPOSIX", "ShareBrokerTesting",
        "ShareBrokerLinux", "ShareBrokerAgentProtocol", "ShareBrokerAgentClient", "ShareBrokerPolicyDocument",
    ]

    @Test("No module linked into the C library imports Foundation")
    func cLibraryIsFoundationFree() throws {
        for module in Self.cLibraryClosure {
            let imports = try Self.imports(under: "Sources/" + module)
            #expect(!imports.isEmpty, "no sources found under Sources/\(module)")
            let offending = imports.filter { $0.module.hasPrefix("Foundation") }
            #expect(offending.isEmpty, "\(module) is linked into libsharebroker.so and must not import Foundation: \(offending)")
        }
    }
}

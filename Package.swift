// swift-tools-version: 6.1
//
// ShareBroker: a data-loss-prevention layer that managed apps link into their process.
// Benchmarks (and the measuring tools) and the fuzz harnesses are packages of their own, under
// Benchmarks/ and Fuzz/, so a plain `swift build` builds what ships and `swift test` stays lean.
import PackageDescription

let strictSwift6: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

// The libraries, by role (docs/ARCHITECTURE.md has the module graph).
let libraryTargets: [Target] = [
        // libsodium, found through pkg-config. Only ShareBrokerCrypto imports it.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // libxcb with XFixes, found through pkg-config. Only Sources/ShareBrokerLinux/X11 imports it.
        .systemLibrary(
            name: "CXCB",
            pkgConfig: "xcb-xfixes",
            providers: [.apt(["libxcb1-dev", "libxcb-xfixes0-dev"])]
        ),
        // GIO (libgio): desktop entries, default handlers, launching. pkg-config's glib-2.0 gives
        // the include folders (gio-unix-2.0's flags carry a -pthread SwiftPM warns about; see
        // Sources/CGIO/shim.h). Only Sources/ShareBrokerLinux/Desktop imports it.
        .systemLibrary(
            name: "CGIO",
            pkgConfig: "glib-2.0",
            providers: [.apt(["libglib2.0-dev"])]
        ),
        // The Linux platform adapters behind the core's protocols, one folder each. Desktop/:
        // Open In and URL hand-offs to desktop apps through GIO. X11/: the X11 clipboard
        // (CLIPBOARD and PRIMARY selections over libxcb).
        .target(
            name: "ShareBrokerLinux",
            dependencies: ["ShareBroker", "ShareBrokerCrypto", "ShareBrokerPOSIX", "CGIO", "CXCB"],
            swiftSettings: strictSwift6
        ),
        // Keys, key rings, nonces, the envelope and secure-file formats: the only module that
        // imports libsodium.
        .target(
            name: "ShareBrokerCrypto",
            dependencies: ["CSodium"],
            swiftSettings: strictSwift6
        ),
        // File-system plumbing the package shares (package access): writeAll.
        .target(
            name: "ShareBrokerPOSIX",
            swiftSettings: strictSwift6
        ),
        // The portable core host apps link: policies, lifecycle, decisions, web views, wipe
        // orchestration and the platform protocols.
        .target(
            name: "ShareBroker",
            dependencies: [
                "ShareBrokerCrypto",
                "ShareBrokerPOSIX",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift6
        ),
        // In-memory and recording adapters for tests, the simulator and benchmarks (as swift-log's
        // InMemoryLogging): a separate product, never needed by a shipped app.
        .target(
            name: "ShareBrokerTesting",
            dependencies: ["ShareBroker", "ShareBrokerCrypto"],
            swiftSettings: strictSwift6
        ),
        // The policy simulator (JSON Lines contract) and the demo scenario, over the real library.
        .target(
            name: "ShareBrokerSimulator",
            dependencies: ["ShareBroker", "ShareBrokerCrypto", "ShareBrokerTesting", "ShareBrokerLinux"],
            swiftSettings: strictSwift6
        ),
        // Native policy documents (one app, or a device registry): strict parsing with bounded
        // resources, conversion to PolicyUpdate, Intune import, summaries and explanations.
        .target(
            name: "ShareBrokerPolicyDocument",
            dependencies: ["ShareBroker"],
            swiftSettings: strictSwift6
        ),
        // The agent protocol's frame codec and message types: pure Swift, no NIO, so a fuzz
        // target and both ends can use it.
        .target(
            name: "ShareBrokerAgentProtocol",
            dependencies: ["ShareBrokerCrypto", "ShareBroker", "CSodium"],
            swiftSettings: strictSwift6
        ),
        // The secure-services agent: registry, peer identity from the kernel, key custody and
        // persistence, policy push, durable logs. Listens on a Unix socket through swift-nio.
        .target(
            name: "ShareBrokerAgent",
            dependencies: [
                "ShareBroker",
                "ShareBrokerPolicyDocument",
                "ShareBrokerAgentProtocol",
                "CSodium",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift6
        ),
        // What an app plugs into Platform: the agent client (SecureServices, policy channel,
        // acknowledgments) over a plain Unix socket.
        .target(
            name: "ShareBrokerAgentClient",
            dependencies: [
                "ShareBroker",
                "ShareBrokerAgentProtocol",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift6
        ),
]

// The two shipped tools (measuring tools live in Benchmarks/, fuzz harnesses in Fuzz/).
let executableTargets: [Target] = [
        // The agent daemon: argument parsing and start-up only.
        .executableTarget(
            name: "sharebrokerd",
            dependencies: [
                "ShareBrokerAgent",
                "ShareBrokerAgentClient",
                "ShareBrokerAgentProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift6
        ),
        // The command-line tool: simulate, demo, policy check/import, explain.
        .executableTarget(
            name: "sharebroker",
            dependencies: [
                "ShareBroker",
                "ShareBrokerSimulator",
                "ShareBrokerPolicyDocument",
                "ShareBrokerAgentClient",
                "ShareBrokerAgentProtocol",
                "ShareBrokerLinux",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSwift6
        ),
]

let testTargets: [Target] = [
        .testTarget(
            name: "ShareBrokerTests",
            dependencies: [
                "ShareBrokerLinux",
                "ShareBrokerCrypto",
                "ShareBrokerTesting",
                "ShareBroker",
                "CSodium",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            resources: [.copy("Resources")],
            swiftSettings: strictSwift6
        ),
        .testTarget(
            name: "ShareBrokerSimulatorTests",
            dependencies: [
                "ShareBrokerCrypto",
                "ShareBrokerTesting",
                "ShareBroker",
                "ShareBrokerSimulator",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strictSwift6
        ),
        .testTarget(
            name: "ShareBrokerPolicyDocumentTests",
            dependencies: [
                "ShareBrokerCrypto",
                "ShareBrokerTesting",
                "ShareBroker",
                "ShareBrokerSimulator",
                "ShareBrokerPolicyDocument",
            ],
            exclude: ["Fixtures"],
            swiftSettings: strictSwift6
        ),
        // The agent: codec and pasteboard unit tests, and end-to-end tests that spawn the built
        // sharebrokerd and copies of sharebroker (build both products before `swift test`).
        .testTarget(
            name: "AgentTests",
            dependencies: [
                "ShareBrokerLinux",
                "ShareBrokerCrypto",
                "ShareBrokerTesting",
                "ShareBroker",
                "ShareBrokerAgentProtocol",
                "ShareBrokerAgentClient",
            ],
            swiftSettings: strictSwift6
        ),
        // The Linux adapters. Desktop/: end-to-end hand-offs to real desktop entries of small
        // recording apps in a temporary XDG tree, through GIO. X11/: end-to-end tests against
        // Xvfb, xclip and xsel started by the tests (skipped, with the reason, where those are
        // not installed).
        .testTarget(
            name: "ShareBrokerLinuxTests",
            dependencies: [
                "ShareBrokerCrypto",
                "ShareBrokerTesting",
                "ShareBroker",
                "ShareBrokerLinux",
                "CXCB",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strictSwift6
        ),
]

let package = Package(
    name: "ShareBroker",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ShareBroker", targets: ["ShareBroker"]),
        .library(name: "ShareBrokerCrypto", targets: ["ShareBrokerCrypto"]),
        .library(name: "ShareBrokerTesting", targets: ["ShareBrokerTesting"]),
        .library(name: "ShareBrokerLinux", targets: ["ShareBrokerLinux"]),
        .library(name: "ShareBrokerSimulator", targets: ["ShareBrokerSimulator"]),
        .library(name: "ShareBrokerPolicyDocument", targets: ["ShareBrokerPolicyDocument"]),
        .executable(name: "sharebroker", targets: ["sharebroker"]),
        .library(name: "ShareBrokerAgent", targets: ["ShareBrokerAgent"]),
        .library(name: "ShareBrokerAgentClient", targets: ["ShareBrokerAgentClient"]),
        .library(name: "ShareBrokerAgentProtocol", targets: ["ShareBrokerAgentProtocol"]),
        .executable(name: "sharebrokerd", targets: ["sharebrokerd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
    ],
    targets: libraryTargets + executableTargets + testTargets
)

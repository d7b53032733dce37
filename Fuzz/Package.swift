// swift-tools-version: 6.1
//
// ShareBroker's libFuzzer harnesses: a package of its own, so a plain `swift build` at the root
// builds only what ships. One folder per harness (Sources/<Name>/main.swift), one per decoder of
// outside bytes; scripts/fuzz.sh builds them with `--sanitize=fuzzer --sanitize=address` and
// runs them over the seeds in corpus/ (README.md). To add one: its folder, a line in
// `harnesses` below, a line in the root Makefile's FUZZ_TARGETS, and seeds under corpus/<Name>/.
import PackageDescription

let library: (String) -> Target.Dependency = { .product(name: $0, package: "ShareBroker") }

let harnesses: [(name: String, dependencies: [Target.Dependency])] = [
    ("FuzzEnvelope", [library("ShareBroker"), library("ShareBrokerCrypto"), "CSodiumFuzz"]),
    ("FuzzPolicyDocument", [library("ShareBrokerPolicyDocument")]),
    ("FuzzIntuneImport", [library("ShareBrokerPolicyDocument")]),
    ("FuzzSimulatorLine", [library("ShareBrokerSimulator"), .product(name: "Logging", package: "swift-log")]),
    ("FuzzAgentFrame", [library("ShareBrokerAgentProtocol")]),
    ("FuzzSecureFile", [library("ShareBroker"), library("ShareBrokerCrypto"), library("ShareBrokerTesting")]),
    ("FuzzSealedSet", [library("ShareBroker"), library("ShareBrokerCrypto")]),
]

let support: [Target] = [
    // libsodium for FuzzEnvelope's raw forgeries, declared here: a system-library target cannot
    // be a library product of the root package.
    .systemLibrary(
        name: "CSodiumFuzz",
        path: "Sources/CSodiumFuzz",
        pkgConfig: "libsodium",
        providers: [.apt(["libsodium-dev"])]
    ),
    // What the harnesses share: reading choices from the input, invariant checks.
    .target(
        name: "FuzzSupport",
        swiftSettings: [.swiftLanguageMode(.v6)]
    ),
]

let package = Package(
    name: "ShareBrokerFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        // `name:` pins the identity: a path dependency is otherwise named after its folder.
        .package(name: "ShareBroker", path: "../"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: support + harnesses.map { harness in
        .executableTarget(
            name: harness.name,
            dependencies: ["FuzzSupport"] + harness.dependencies,
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    }
)

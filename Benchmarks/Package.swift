// swift-tools-version: 6.1
//
// ShareBroker's benchmark harness: a package of its own so the root package never depends on
// package-benchmark (and `swift test` at the root stays lean).
//
//   cd Benchmarks && swift package --allow-writing-to-package-directory benchmark
//
// package-benchmark 1.38.1 (now published as ordo-one/benchmark; the old package-benchmark URL
// still resolves but warns that the legacy identifier will go away) on Swift 6.3 needs its
// `MallocInterposer` trait named explicitly: naming the traits replaces the package's default set,
// which also holds `RuntimeInterposer`, a Linux 6.3-only dependency
// (ordo-one/swift-runtime-interposer) that has no local mirror here. Without it the ARC metrics
// (retainCount, ...) are unavailable; wall clock and the malloc metrics are not affected.
import PackageDescription

let package = Package(
    name: "ShareBrokerBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // `name:` pins the identity: a path dependency is otherwise named after its folder
        // (wt-bench, main, whatever a CI clone is called).
        .package(name: "ShareBroker", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1",
                 traits: ["MallocInterposer"]),
        // Only the SwiftCryptoBenchmarks target uses it (a labelled peer in the report). Kept out
        // of ShareBrokerBenchmarks so the CI allocation check (`--target ShareBrokerBenchmarks`)
        // never builds BoringSSL.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        // libsodium for the raw baselines, declared here so the root package keeps its CSodium
        // module private (a system-library target cannot be a library product).
        .systemLibrary(
            name: "CSodiumBench",
            path: "Sources/CSodiumBench",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // Handshake to ready, policy push to 100 clients, copy path with the agent client, over a
        // real agent: `swift run -c release agent-bench` (docs/PERFORMANCE.md).
        .executableTarget(
            name: "agent-bench",
            dependencies: [
                .product(name: "ShareBroker", package: "ShareBroker"),
                .product(name: "ShareBrokerCrypto", package: "ShareBroker"),
                .product(name: "ShareBrokerTesting", package: "ShareBroker"),
                .product(name: "ShareBrokerAgent", package: "ShareBroker"),
                .product(name: "ShareBrokerAgentClient", package: "ShareBroker"),
                .product(name: "ShareBrokerAgentProtocol", package: "ShareBroker"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/agent-bench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Peak memory and throughput of secure files against raw secretstream:
        // `swift build -c release --product securefile-memprobe`.
        .executableTarget(
            name: "securefile-memprobe",
            dependencies: [
                .product(name: "ShareBroker", package: "ShareBroker"),
                .product(name: "ShareBrokerCrypto", package: "ShareBroker"),
                "CSodiumBench",
            ],
            path: "Sources/securefile-memprobe",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // What both benchmark targets share: the run modes (timed / allocations only), the paired
        // measurement of ours against raw libsodium, payload sizes, raw libsodium fixtures.
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "CSodiumBench",
            ],
            path: "Sources/BenchmarkSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "ShareBrokerBenchmarks",
            dependencies: [
                .product(name: "ShareBroker", package: "ShareBroker"),
                .product(name: "ShareBrokerCrypto", package: "ShareBroker"),
                .product(name: "ShareBrokerTesting", package: "ShareBroker"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkSupport",
                "CSodiumBench",
            ],
            path: "Benchmarks/ShareBrokerBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        // The X11 clipboard adapter between two apps on a private Xvfb (ratios of SecureCopy to
        // clear copy-then-paste, paste next to xclip -o). Not in the CI allocation check.
        .executableTarget(
            name: "X11ClipboardBenchmarks",
            dependencies: [
                .product(name: "ShareBroker", package: "ShareBroker"),
                .product(name: "ShareBrokerCrypto", package: "ShareBroker"),
                .product(name: "ShareBrokerTesting", package: "ShareBroker"),
                .product(name: "ShareBrokerLinux", package: "ShareBroker"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/X11ClipboardBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        // The Linux desktop hand-off (ShareBrokerLinux): decision + private copy or dummy for a
        // 1 MiB document, and the private copy against `cp` of the same file in the same samples.
        // File I/O: not part of the CI allocation check.
        .executableTarget(
            name: "DesktopBenchmarks",
            dependencies: [
                .product(name: "ShareBroker", package: "ShareBroker"),
                .product(name: "ShareBrokerCrypto", package: "ShareBroker"),
                .product(name: "ShareBrokerTesting", package: "ShareBroker"),
                .product(name: "ShareBrokerLinux", package: "ShareBroker"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/DesktopBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        // The C interface against Swift, same run (README "Using it from C"): the C loops call
        // libsharebroker-c.so of the root's release build (`swift build -c release --product
        // sharebroker-c` at the root first), the Swift loops the same calls on the modules.
        .target(
            name: "CCapiBench",
            path: "Sources/CCapiBench",
            cSettings: [.unsafeFlags(["-I\(Context.packageDirectory)/../include"])],
            linkerSettings: [.unsafeFlags([
                "-L\(Context.packageDirectory)/../.build/release", "-l:libsharebroker-c.so",
                "-Xlinker", "-rpath", "-Xlinker", "\(Context.packageDirectory)/../.build/release",
            ])]
        ),
        .executableTarget(
            name: "capi-bench",
            dependencies: [
                .product(name: "ShareBroker", package: "ShareBroker"),
                .product(name: "ShareBrokerTesting", package: "ShareBroker"),
                "CCapiBench",
            ],
            path: "Sources/capi-bench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // swift-crypto's ChaChaPoly (ChaCha20-Poly1305 IETF, 96-bit nonce, BoringSSL): the peer a
        // Swift developer would otherwise pick. Not XChaCha20, so a comparison, not a baseline.
        .executableTarget(
            name: "SwiftCryptoBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Crypto", package: "swift-crypto"),
                "BenchmarkSupport",
                "CSodiumBench",
            ],
            path: "Benchmarks/SwiftCryptoBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
    ]
)

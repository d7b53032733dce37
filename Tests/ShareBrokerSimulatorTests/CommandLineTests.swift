import Foundation
import Testing

/// Runs the built `sharebroker` binary (the test command builds it first).
enum CLI {
    static var binary: URL {
        // .build/debug/ShareBrokerPackageTests.xctest -> .build/debug/sharebroker
        let here = Bundle.main.bundleURL
        let candidates = [here.deletingLastPathComponent().appendingPathComponent("sharebroker"),
                          here.appendingPathComponent("sharebroker")]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    static func run(_ arguments: [String], input: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let data = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

@Suite("sharebroker command line")
struct CommandLineTests {
    @Test("simulate exits 0 when every line is accepted and answers every non-blank line")
    func accepted() throws {
        #expect(FileManager.default.isExecutableFile(atPath: CLI.binary.path), "build the sharebroker product first")
        let input = #"{"op":"start","app":"a"}"# + "\n\n" + #"{"op":"policy","auth":"authorized"}"# + "\n"
        let (status, output) = try CLI.run(["simulate"], input: input)
        #expect(status == 0)
        let lines = output.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.last?.hasPrefix(#"{"line":3,"op":"policy""#) == true)
    }

    @Test("simulate exits 65 when a line is rejected, still answering every line")
    func rejected() throws {
        let input = #"{"op":"start","app":"a"}"# + "\n" + "garbage\n" + #"{"op":"policy","auth":"authorized"}"# + "\n"
        let (status, output) = try CLI.run(["simulate"], input: input)
        #expect(status == 65)
        #expect(output.split(separator: "\n").count == 3)
        #expect(output.contains(#""line":2,"op":null,"error""#))
    }

    @Test("demo runs every step without a rejected line")
    func demo() throws {
        let (status, output) = try CLI.run(["demo"], input: "")
        #expect(status == 0)
        #expect(output.contains("delivered"))
        #expect(output.contains("dummy"))
        #expect(!output.contains("ERROR"))
    }
}

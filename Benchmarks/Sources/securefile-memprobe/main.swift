// securefile-memprobe: peak memory and throughput of secure files, for the benchmark report.
//
//   swift build -c release --product securefile-memprobe
//   .build/release/securefile-memprobe [folder] [MiB] [rounds]
//
// 1. Peak RSS: a forked child writes a secure file of MiB (default 64) through SecureFileWriter
//    in 64 KiB pieces; another reads it back through SecureFileReader in 64 KiB reads. Each
//    child first warms up on a small file, then resets its peak (`echo 5 > /proc/self/clear_refs`),
//    notes VmRSS, does the work and reads VmHWM. The figure is the peak above that baseline
//    (goal: under 4 MiB).
// 2. Throughput, in the same run over the same data: our write (encrypt, write, fsync, rename,
//    fsync folder) against raw crypto_secretstream_xchacha20poly1305 (one stream, push per
//    64 KiB chunk, write, fsync, rename, fsync folder); our read (open, authenticate header,
//    pread and decrypt every chunk) against raw (pread and pull every chunk). Both sides use
//    one reused 64 KiB input buffer and one reused output buffer, the same folder, the same
//    durability. Medians of `rounds` (default 7), alternating which side goes first. Also the
//    raw secretstream with no I/O, for scale. Goal: ratio (ours / raw throughput) >= 0.9.
//    `ratioToRaw` divides the medians; `pairedRatioToRaw` is the median of each round's ratio
//    (ours and raw ran back to back), which resists load that drifts on a shared machine.
//
// Prints one JSON object. Build in release: debug builds are much slower.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSodiumBench
@_spi(Benchmarks) import ShareBroker
import ShareBrokerCrypto

/// Everything the probe measures; used from the main thread only.
final class Probe {
    let chunk = 65_536
    let folder: String
    let mebibytes: Int
    let rounds: Int
    let total: Int
    let chunks: Int
    /// One 64 KiB input buffer, reused: its first 8 bytes carry the chunk number so chunks differ.
    let input: UnsafeMutableRawPointer
    /// One reused output buffer (a chunk and its overhead).
    let output: UnsafeMutableRawPointer
    /// The raw secretstream key.
    var rawKey = [UInt8](repeating: 0, count: crypto_secretstream_xchacha20poly1305_keybytes())
    let tagMessage = crypto_secretstream_xchacha20poly1305_tag_message()
    let tagFinal = crypto_secretstream_xchacha20poly1305_tag_final()

    init(arguments: [String]) {
        folder = arguments.count > 1 ? arguments[1] : "/tmp/securefile-memprobe-\(getpid())"
        mebibytes = arguments.count > 2 ? max(1, Int(arguments[2]) ?? 64) : 64
        rounds = arguments.count > 3 ? max(1, Int(arguments[3]) ?? 7) : 7
        total = mebibytes << 20
        chunks = total / 65_536
        guard sodium_init() >= 0 else { Probe.fail("libsodium could not start") }
        input = UnsafeMutableRawPointer.allocate(byteCount: 65_536, alignment: 16)
        randombytes_buf(input, 65_536)
        output = UnsafeMutableRawPointer.allocate(byteCount: 65_536 + 64, alignment: 16)
        crypto_secretstream_xchacha20poly1305_keygen(&rawKey)
    }

    static func fail(_ message: String) -> Never {
        let text = "securefile-memprobe: \(message)\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
        exit(1)
    }

    func fillInput(_ index: Int) {
        input.storeBytes(of: UInt64(index), as: UInt64.self)
    }

    // MARK: Measurements

    func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// A `kB` field of /proc/self/status, in bytes.
    func statusField(_ name: String) -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return -1 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix(name + ":") {
                let digits = text.dropFirst(name.count + 1).filter { $0.isNumber }
                return (Int(digits) ?? -1) * 1024
            }
        }
        return -1
    }

    /// Resets VmHWM to the current RSS; false if the kernel refused.
    func resetPeak() -> Bool {
        let fd = open("/proc/self/clear_refs", O_WRONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return write(fd, "5", 1) == 1
    }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    // MARK: Data


    // MARK: Ours

    func oursWrite(_ store: SecureFileStore, name: String, count: Int) throws(SecureFileError) {
        let writer = try store.createFile(name)
        for index in 0..<count {
            fillInput(index)
            try writer.write(UnsafeRawBufferPointer(start: input, count: chunk))
        }
        try writer.close()
    }

    func oursRead(_ store: SecureFileStore, name: String) throws(SecureFileError) -> Int {
        let reader = try store.open(name)
        var offset = 0
        while offset < reader.size {
            offset += try reader.read(offset: offset, into: UnsafeMutableRawBufferPointer(start: output, count: chunk))
        }
        reader.close()
        return offset
    }

    // MARK: Raw secretstream, the same work without our format


    func writeAll(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) {
        var done = 0
        while done < count {
            let n = write(fd, pointer + done, count - done)
            if n < 0 { if errno == EINTR { continue }; Probe.fail("raw write: errno \(errno)") }
            done += n
        }
    }

    func syncFolder(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY)
        if fd >= 0 { fsync(fd); close(fd) }
    }

    func rawWrite(path: String, count: Int) {
        let temporary = path + ".rawtmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { Probe.fail("raw open: errno \(errno)") }
        var state = crypto_secretstream_xchacha20poly1305_state()
        var header = [UInt8](repeating: 0, count: crypto_secretstream_xchacha20poly1305_headerbytes())
        crypto_secretstream_xchacha20poly1305_init_push(&state, &header, rawKey)
        writeAll(fd, header, header.count)
        for index in 0..<count {
            fillInput(index)
            var written: UInt64 = 0
            crypto_secretstream_xchacha20poly1305_push(
                &state, output.assumingMemoryBound(to: UInt8.self), &written,
                input.assumingMemoryBound(to: UInt8.self), UInt64(chunk), nil, 0,
                index == count - 1 ? tagFinal : tagMessage)
            writeAll(fd, output, Int(written))
        }
        fsync(fd)
        close(fd)
        rename(temporary, path)
        syncFolder(folder)
    }

    func rawRead(path: String) -> Int {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { Probe.fail("raw open for reading: errno \(errno)") }
        defer { close(fd) }
        var state = crypto_secretstream_xchacha20poly1305_state()
        var header = [UInt8](repeating: 0, count: crypto_secretstream_xchacha20poly1305_headerbytes())
        guard pread(fd, &header, header.count, 0) == header.count,
              crypto_secretstream_xchacha20poly1305_init_pull(&state, header, rawKey) == 0 else { Probe.fail("raw header") }
        let frame = chunk + crypto_secretstream_xchacha20poly1305_abytes()
        let ciphertext = UnsafeMutableRawPointer.allocate(byteCount: frame, alignment: 16)
        defer { ciphertext.deallocate() }
        var offset = header.count
        var produced = 0
        while true {
            let n = pread(fd, ciphertext, frame, off_t(offset))
            guard n > 0 else { Probe.fail("raw read: short") }
            var length: UInt64 = 0
            var tag: UInt8 = 0
            guard crypto_secretstream_xchacha20poly1305_pull(
                &state, output.assumingMemoryBound(to: UInt8.self), &length, &tag,
                ciphertext.assumingMemoryBound(to: UInt8.self), UInt64(n), nil, 0) == 0 else { Probe.fail("raw pull") }
            produced += Int(length)
            offset += n
            if tag == tagFinal { return produced }
        }
    }

    func rawInMemory(count: Int) {
        var state = crypto_secretstream_xchacha20poly1305_state()
        var header = [UInt8](repeating: 0, count: crypto_secretstream_xchacha20poly1305_headerbytes())
        crypto_secretstream_xchacha20poly1305_init_push(&state, &header, rawKey)
        for index in 0..<count {
            fillInput(index)
            var written: UInt64 = 0
            crypto_secretstream_xchacha20poly1305_push(
                &state, output.assumingMemoryBound(to: UInt8.self), &written,
                input.assumingMemoryBound(to: UInt8.self), UInt64(chunk), nil, 0,
                index == count - 1 ? tagFinal : tagMessage)
        }
    }

    // MARK: Run

    /// Runs `work` in a forked child that first repeats the warm-up (a fork child faults the
    /// parent's code pages back in as it touches them, which is not the work's memory), then
    /// measures its own peak. Returns (reset worked, baseline RSS, peak RSS), in bytes.
    func measureInChild(_ store: SecureFileStore,
                        _ work: (SecureFileStore) throws(SecureFileError) -> Void) -> (Bool, Int, Int) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { Probe.fail("pipe: errno \(errno)") }
        let child = fork()
        guard child >= 0 else { Probe.fail("fork: errno \(errno)") }
        if child == 0 {
            close(fds[0])
            do {
                try warmUp(store, name: "warm-child")
                let resettable = resetPeak()
                var figures = [resettable ? 1 : 0, statusField("VmRSS"), 0]
                try work(store)
                figures[2] = statusField("VmHWM")
                _ = figures.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
            } catch {
                _exit(2)
            }
            _exit(0)
        }
        close(fds[1])
        var figures = [0, 0, 0]
        let got = figures.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
        close(fds[0])
        var status: Int32 = 0
        waitpid(child, &status, 0)
        guard got == MemoryLayout<Int>.size * 3 else { Probe.fail("the measuring child failed (status \(status))") }
        return (figures[0] == 1, figures[1], figures[2])
    }

    /// Writes and reads a small file `name` and the raw equivalent once (code pages, allocator
    /// arenas), then removes it.
    func warmUp(_ store: SecureFileStore, name: String) throws(SecureFileError) {
        try oursWrite(store, name: name, count: 16)
        _ = try oursRead(store, name: name)
        try store.remove(name)
    }

    func run() throws(SecureFileError) -> String {
        if mkdir(folder, 0o700) != 0 && errno != EEXIST { Probe.fail("cannot create \(folder): errno \(errno)") }
        let fileKeys: FileKeyRing
        do { fileKeys = try FileKeyRing.generate() } catch { Probe.fail("no keys: \(error)") }
        let store = SecureFileStore.withKeys(directory: folder, fileKeys: fileKeys)
        let rawPath = folder + "/raw.bin"

        // Warm up every path once (code pages, allocator arenas), on a small file.
        try warmUp(store, name: "warm")
        rawWrite(path: rawPath, count: 16)
        _ = rawRead(path: rawPath)

        // 1. Peak memory, each phase in its own forked child so that neither inherits the
        //    other's allocations (each has a clean baseline).
        let total = self.total, chunks = self.chunks
        let (resettable, baselineWrite, peakWrite) = measureInChild(store) { (store) throws(SecureFileError) in
            try self.oursWrite(store, name: "probe", count: chunks)
        }
        let (_, baselineRead, peakRead) = measureInChild(store) { (store) throws(SecureFileError) in
            let readBytes = try self.oursRead(store, name: "probe")
            guard readBytes == total else { Probe.fail("read \(readBytes) of \(total) bytes") }
        }
        guard try oursRead(store, name: "probe") == total else { Probe.fail("the probe file is incomplete") }

        // 2. Throughput.
        var oursWriteTimes: [Double] = [], rawWriteTimes: [Double] = []
        var oursReadTimes: [Double] = [], rawReadTimes: [Double] = [], memoryTimes: [Double] = []
        for round in 0..<rounds {
            let oursFirst = round % 2 == 0
            for side in (oursFirst ? [0, 1] : [1, 0]) {
                let start = now()
                if side == 0 { try oursWrite(store, name: "probe", count: chunks) } else { rawWrite(path: rawPath, count: chunks) }
                if side == 0 { oursWriteTimes.append(now() - start) } else { rawWriteTimes.append(now() - start) }
            }
            for side in (oursFirst ? [0, 1] : [1, 0]) {
                let start = now()
                let n = side == 0 ? try oursRead(store, name: "probe") : rawRead(path: rawPath)
                guard n == total else { Probe.fail("short read") }
                if side == 0 { oursReadTimes.append(now() - start) } else { rawReadTimes.append(now() - start) }
            }
            let start = now()
            rawInMemory(count: chunks)
            memoryTimes.append(now() - start)
        }
        try store.remove("probe")
        unlink(rawPath)
        rmdir(folder)

        let mib = Double(total) / Double(1 << 20)
        func rate(_ times: [Double]) -> Double { (mib / median(times) * 10).rounded() / 10 }
        func ratio(_ ours: [Double], _ raw: [Double]) -> Double { (median(raw) / median(ours) * 1000).rounded() / 1000 }
        /// The median of each round's own ratio: load that drifts between rounds cancels out.
        func pairedRatio(_ ours: [Double], _ raw: [Double]) -> Double {
            (median(zip(ours, raw).map { $1 / $0 }) * 1000).rounded() / 1000
        }
        let kib = 1024
        return """
        {"fileMiB": \(mebibytes), "chunkBytes": \(chunk), "rounds": \(rounds), "folder": "\(folder)", \
        "peakResetSupported": \(resettable), \
        "write": {"baselineRSSKiB": \(baselineWrite / kib), "peakRSSKiB": \(peakWrite / kib), \
        "peakAboveBaselineKiB": \((peakWrite - baselineWrite) / kib)}, \
        "read": {"baselineRSSKiB": \(baselineRead / kib), "peakRSSKiB": \(peakRead / kib), \
        "peakAboveBaselineKiB": \((peakRead - baselineRead) / kib)}, \
        "peakGoalKiB": 4096, \
        "throughputMiBps": {"oursWrite": \(rate(oursWriteTimes)), "rawSecretstreamWrite": \(rate(rawWriteTimes)), \
        "oursRead": \(rate(oursReadTimes)), "rawSecretstreamRead": \(rate(rawReadTimes)), \
        "rawSecretstreamNoIO": \(rate(memoryTimes))}, \
        "ratioToRaw": {"write": \(ratio(oursWriteTimes, rawWriteTimes)), "read": \(ratio(oursReadTimes, rawReadTimes))}, \
        "pairedRatioToRaw": {"write": \(pairedRatio(oursWriteTimes, rawWriteTimes)), \
        "read": \(pairedRatio(oursReadTimes, rawReadTimes))}, \
        "ratioGoal": 0.9}
        """
    }
}

do {
    print(try Probe(arguments: CommandLine.arguments).run())
} catch {
    Probe.fail("\(error)")
}

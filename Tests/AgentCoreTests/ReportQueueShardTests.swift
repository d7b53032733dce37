import Foundation
@testable import ShareBrokerAgent
import Testing

/// Issue 17: the coalescing window is sharded by exporting thread; a kind seen through several
/// shards must still leave as one record with the whole count.
@Suite("Report coalescing across the window's shards")
struct ReportQueueShardTests {
    @Test("24 threads export one kind 2,000 times each, plus one kind of their own: one record of 48,000, 24 of one")
    func mergedAcrossShards() throws {
        let received = Locked<[SystemLogRecord]>([])
        let queue = ReportQueue(name: "test.reports", batchSize: 256) { batch in
            received.withLock { $0 += batch }
            return true
        }
        defer { queue.stop() }
        let threads = 24, each = 2_000
        let started = DispatchGroup()
        let burstStart = Date()
        for t in 0 ..< threads {
            started.enter()
            Thread.detachNewThread {
                for _ in 0 ..< each {
                    queue.export(SystemLogRecord(event: "blocked", app: "com.acme.notes", action: "copy",
                                                 rule: "pasteboardUnauthorized", push: 3, uid: 1000))
                }
                queue.export(SystemLogRecord(event: "blocked", app: "com.acme.app\(t)", action: "copy", push: 3, uid: 1000))
                started.leave()
            }
        }
        started.wait()
        // The windows the burst could touch: one per started second it lasted, and one more if it
        // straddled a window's close (under ThreadSanitizer on a busy machine it lasts seconds).
        let windows = Int(Date().timeIntervalSince(burstStart).rounded(.up)) + 1
        // One window (1 s) and the send.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let total = received.withLock { $0.reduce(0) { $0 + ($1.count ?? 1) } }
            if total >= threads * each + threads { break }
            usleep(50_000)
        }
        let records = received.withLock { $0 }
        let notes = records.filter { $0.app == "com.acme.notes" }
        let total = notes.reduce(0) { $0 + ($1.count ?? 1) }
        #expect(total == threads * each, "every export counted")
        let noteRecords = notes.count
        #expect(noteRecords <= max(2, windows), "one record per window the burst touched (\(windows)): \(noteRecords)")
        let own = Set(records.compactMap { (record: SystemLogRecord) -> String? in record.app }.filter { $0.hasPrefix("com.acme.app") })
        #expect(own.count == threads)
        #expect(queue.droppedCount == 0)
    }
}

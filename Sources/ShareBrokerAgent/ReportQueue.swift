import Foundation
import Synchronization

/// The bounded, non-blocking queue between the agent and a report destination (the system log,
/// an OpenTelemetry collector): ``export(_:)`` never waits on the destination; records of the
/// same event, app, action, rule, policy version and user that arrive within a second are
/// coalesced into one record with a `count` (a burst of 50,000 blocked copies a second becomes
/// one record per app and second; the durable local audit log keeps every one); a thread of its
/// own sends records in batches of at most `batchSize`; when the destination does not take a
/// batch, the records stay queued and are retried after `retryDelay`; beyond ``capacity`` the
/// oldest are dropped and counted, and a `reports-dropped` record says how many once the
/// destination takes records again.
final class ReportQueue: Sendable {
    /// The bound: records beyond it drop the oldest.
    static let capacity = 4096

    /// What makes two records the same event for coalescing.
    struct Kind: Hashable {
        var event: String
        var app: String?
        var action: String?
        var rule: String?
        var push: UInt64?
        var uid: UInt32?
        var reason: String?
    }

    /// One shard of this second's window: the records first seen through it, with their
    /// arrival number, and how many each stands for. Exporting threads spread over the shards
    /// by thread, so 200 connection threads do not queue on one lock; a kind seen through two
    /// shards is merged when the window closes.
    struct Shard {
        var counts: [Kind: Int] = [:]
        var order: [(sequence: UInt64, kind: Kind, record: SystemLogRecord)] = []
        var dropped = 0
    }

    /// The number of window shards (a power of two).
    static let shardCount = 16

    struct State {
        var records: [SystemLogRecord] = []
        var head = 0
        var dropped = 0
        var stopped = false
        var count: Int { records.count - head }

        mutating func compact() {
            if head > 1024 && head * 2 > records.count {
                records.removeFirst(head)
                head = 0
            }
        }
    }

    private let state = Mutex(State())
    /// A shard's lock in its own allocation (a `Mutex` cannot live in an array).
    final class ShardBox: Sendable {
        let window = Mutex(Shard())
    }
    private let shards: [ShardBox] = (0 ..< ReportQueue.shardCount).map { _ in ShardBox() }
    /// Numbers first arrivals across shards, so a closed window keeps arrival order.
    private let arrivals = Atomic<UInt64>(0)
    private let wake = DispatchSemaphore(value: 0)
    private let batchSize: Int
    private let retryDelay: Duration
    private let send: @Sendable ([SystemLogRecord]) -> Bool
    private let device: String?

    /// Starts the sending thread. `send` returns whether the destination took the whole batch.
    init(name: String, batchSize: Int, retryDelay: Duration = .milliseconds(100), device: String? = nil,
         send: @escaping @Sendable ([SystemLogRecord]) -> Bool) {
        self.device = device
        self.batchSize = max(1, batchSize)
        self.retryDelay = retryDelay
        self.send = send
        let thread = Thread { [self] in self.drain() }
        thread.name = name
        thread.start()
    }

    /// Queues `record`, stamped with this queue's device when it names none; never blocks on
    /// the destination.
    func export(_ record: SystemLogRecord) {
        var record = record
        if record.device == nil { record.device = device }
        let kind = Kind(event: record.event, app: record.app, action: record.action, rule: record.rule,
                        push: record.push, uid: record.uid, reason: record.reason)
        // Thread handles are addresses a stack apart (equal low bits): mix them (Fibonacci hashing).
        let shard = Int(truncatingIfNeeded: (UInt64(UInt(pthread_self())) &* 0x9E37_79B9_7F4A_7C15) >> 60) & (Self.shardCount - 1)
        shards[shard].window.withLock { shard in
            if let seen = shard.counts[kind] {
                shard.counts[kind] = seen + 1
            } else if shard.order.count < Self.capacity / Self.shardCount {
                shard.counts[kind] = 1
                let sequence = arrivals.wrappingAdd(1, ordering: .relaxed).oldValue
                shard.order.append((sequence, kind, record))
            } else {
                shard.dropped += 1
            }
        }
    }

    /// Moves this second's coalesced records into the sending queue (the oldest dropped and
    /// counted beyond ``capacity``); `true` when there is something to send.
    private func closeWindow() -> Bool {
        // Take every shard's window, merge kinds seen through several shards, keep first arrival order.
        var merged: [Kind: (sequence: UInt64, record: SystemLogRecord, count: Int)] = [:]
        var droppedInWindow = 0
        for shard in shards {
            let (counts, order, dropped) = shard.window.withLock { shard in
                defer {
                    shard.counts.removeAll(keepingCapacity: true)
                    shard.order.removeAll(keepingCapacity: true)
                    shard.dropped = 0
                }
                return (shard.counts, shard.order, shard.dropped)
            }
            droppedInWindow += dropped
            for entry in order {
                let count = counts[entry.kind] ?? 1
                if let seen = merged[entry.kind] {
                    merged[entry.kind] = (min(seen.sequence, entry.sequence), seen.record, seen.count + count)
                } else {
                    merged[entry.kind] = (entry.sequence, entry.record, count)
                }
            }
        }
        let window = merged.values.sorted { $0.sequence < $1.sequence }
        return state.withLock { state in
            state.dropped += droppedInWindow
            for entry in window {
                var record = entry.record
                if entry.count > 1 { record.count = entry.count }
                if state.count >= Self.capacity {
                    state.head += 1
                    state.dropped += 1
                    state.compact()
                }
                state.records.append(record)
            }
            return state.count > 0 || state.dropped > 0
        }
    }

    /// How many records were dropped and not yet reported (including this second's window).
    var droppedCount: Int { state.withLock { $0.dropped } + shards.reduce(0) { $0 + $1.window.withLock { $0.dropped } } }

    /// How many records wait to be sent (after coalescing).
    var queuedCount: Int { state.withLock { $0.count } }

    /// How long records gather before they are coalesced and sent.
    static let window: Duration = .seconds(1)

    /// Stops the sending thread after what is queued (or at once if the destination is away).
    func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }

    private func drain() {
        while true {
            // A second's records at a time (or at once when a retry or stop asks).
            let (seconds, attoseconds) = Self.window.components
            _ = wake.wait(timeout: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)))
            guard closeWindow() || state.withLock({ $0.stopped }) else { continue }
            while true {
                let (batch, dropped, stopped) = state.withLock { state -> ([SystemLogRecord], Int, Bool) in
                    (Array(state.records[state.head..<min(state.records.count, state.head + batchSize)]), state.dropped, state.stopped)
                }
                if dropped > 0 {
                    let notice = SystemLogRecord(event: "reports-dropped", device: device,
                                                 reason: "\(dropped) records dropped: the destination did not take them", isWarning: true)
                    guard send([notice]) else {
                        if stopped { return }
                        retryLater()
                        break
                    }
                    state.withLock { $0.dropped -= dropped }
                }
                guard !batch.isEmpty else {
                    if stopped { return }
                    break
                }
                guard send(batch) else {
                    if stopped { return }
                    retryLater()
                    break
                }
                state.withLock { state in
                    // Records dropped while the batch was out moved the head past some of them.
                    let sentStillQueued = zip(state.records[state.head...], batch).prefix { $0 == $1 }.count
                    state.head += sentStillQueued
                    state.compact()
                }
            }
        }
    }

    private func retryLater() {
        let (seconds, attoseconds) = retryDelay.components
        usleep(UInt32(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
        wake.signal()
    }
}

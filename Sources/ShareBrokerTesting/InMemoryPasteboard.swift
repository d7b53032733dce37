import ShareBroker

/// A `Pasteboard` in memory, shared by whoever holds the instance.
public final class InMemoryPasteboard: Pasteboard {
    private let state = Mutex<(items: [PasteboardItem], changeCount: Int)>(([], 0))

    /// Creates an empty pasteboard.
    public init() {}

    public func read() -> (items: [PasteboardItem], changeCount: Int) { state.withLock { $0 } }

    @discardableResult
    public func write(_ items: [PasteboardItem]) -> Int {
        state.withLock { state in
            state.items = items
            state.changeCount += 1
            return state.changeCount
        }
    }

    /// Replaces the contents with `item`, reusing the one-item storage of the previous contents
    /// when nobody else holds it (no allocation for a copy after a copy).
    @discardableResult
    public func write(_ item: PasteboardItem) -> Int {
        state.withLock { state in
            if state.items.count == 1 {
                state.items[0] = item
            } else {
                state.items = [item]
            }
            state.changeCount += 1
            return state.changeCount
        }
    }

    @discardableResult
    public func clear(ifChangeCount changeCount: Int) -> Bool {
        state.withLock { state in
            guard state.changeCount == changeCount else { return false }
            state.items = []
            state.changeCount += 1
            return true
        }
    }
}

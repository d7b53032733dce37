import Foundation
import ShareBroker
import ShareBrokerCrypto

/// The pasteboard ops of the contract: `copy`, `paste`, `pasteboardRaw`.
extension PolicySimulator {
    func copy(_ f: Fields, _ w: World) throws(SimulatorError) -> [(String, JSON)] {
        let item: PasteboardItem
        if let text = try f.string("text") {
            item = .text(text)
        } else if let encoded = try f.string("dataBase64") {
            guard let data = Data(base64Encoded: encoded) else {
                throw SimulatorError("field 'dataBase64' is not valid base64")
            }
            guard let type = try f.string("type") else {
                throw SimulatorError("missing required field 'type' (required with dataBase64, e.g. public.png)")
            }
            item = PasteboardItem(type: type, bytes: Array(data))
        } else {
            throw SimulatorError("missing required field 'text' (or 'dataBase64' with 'type')")
        }
        let from = try f.string("from")
        if let writer = try f.appID("as"), writer != w.broker.appID {
            // Another app writes: the library does not govern it, so the item goes on in the clear.
            guard from == nil else { throw SimulatorError("field 'from' names a web view of the app under test; it cannot go with 'as'") }
            w.pasteboard.write([item])
            return [("outcome", .string("written")), ("notifications", .array([])),
                    ("why", .string("written: \(writer) is another app; the library does not govern its copies"))]
        }
        let view: WebViewHandle?
        do throws(ShareBrokerError) {
            view = try from.map { id throws(ShareBrokerError) in try w.broker.webViews.existingHandle(for: id) }
        } catch {
            throw SimulatorError("field 'from': \(error)")
        }
        return try warnable("copy", w) { question in
            w.broker.copyAsking(CollectionOfOne(item), fromWebView: view) { result in
                switch result {
                case .success(let copied):
                    let outcome = switch copied.action {
                    case .writeClear: "written"
                    case .writeSealed: "encrypted"
                    case .blocked: "blocked"
                    }
                    question.finish([("outcome", .string(outcome)), ("notifications", .array(w.app.notifications.map(JSON.string))),
                                     ("why", .string(copied.outcome.map(Self.warnWhy) ?? copied.decision?.rule.explanation ?? ""))]
                                    + Self.warnMembers(copied.outcome, w))
                case .failure(let error):
                    question.finish([("outcome", .string("failed")),
                                     ("error", .string(from != nil ? "field 'from': \(error)" : "field 'text': \(error)"))])
                }
            }
        }
    }

    func paste(_ f: Fields, _ w: World) throws(SimulatorError) -> [(String, JSON)] {
        let reader = try f.appID("as") ?? w.broker.appID
        let item: PasteboardItem?
        if reader == w.broker.appID {
            item = w.broker.paste()
        } else {
            let app = w.broker.currentSnapshot.device[reader]
            var ring: KeyRing?
            if app?.isAuthorizedAppConnectApp == true { ring = try? w.custodian.keyRing(for: reader) }
            item = PasteboardReader.readable(w.pasteboard.read().items, keyRing: ring)
        }
        guard let item else { return [("text", .null)] }
        if item.type == PasteboardItem.textType {
            return [("text", .string(String(decoding: item.bytes, as: UTF8.self)))]
        }
        return [("dataBase64", .string(Data(item.bytes).base64EncodedString())), ("type", .string(item.type))]
    }

    func pasteboardRaw(_ w: World) -> [(String, JSON)] {
        let items = w.pasteboard.read().items.map { item in
            JSON.object([("type", .string(item.type)), ("bytesBase64", .string(Data(item.bytes).base64EncodedString()))])
        }
        return [("items", .array(items))]
    }
}

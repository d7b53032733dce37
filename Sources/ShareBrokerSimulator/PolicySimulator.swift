import Foundation
import ShareBroker
import ShareBrokerLinux
import ShareBrokerTesting

/// The policy simulator of `docs/SIMULATE.md` (JSON Lines, version 1): replays server policies
/// and user actions against the real library, with the outside world simulated in-process.
///
/// Every line is validated completely before anything changes, so a rejected line leaves the
/// simulated state exactly as it was.
public final class PolicySimulator {
    /// The contract version this simulator implements.
    public static let contractVersion = 1

    struct World {
        let broker: ShareBroker
        let app: SimulatedApp
        let sink: RecordingReportSink
        let pasteboard: InMemoryPasteboard
        let custodian: InProcessKeyCustodian
        let clock: ManualBootClock
        /// Whether the app has a handler for warnings (`implements` lists `warnHandler`).
        let warnHandler: Bool
    }

    /// The monotonic time the warn ledger reads at `start` (advanced by `clock`), in nanoseconds.
    static let warnClockBase: UInt64 = 1_000_000_000

    private let outboxDirectory: String
    private var world: World?
    /// The question the simulated user has not answered yet (``answer(_:_:)``).
    var openQuestion: OpenQuestion?

    /// Creates a simulator whose hand-overs go under `outboxDirectory` (absolute).
    public init(outboxDirectory: String) {
        self.outboxDirectory = outboxDirectory
    }

    /// Answers one input line. `nil` for a blank line (which gets no answer).
    public func handle(line text: String, number: Int) -> (json: JSON, rejected: Bool)? {
        if text.allSatisfy(\.isWhitespace) { return nil }
        var op: JSON = .null
        do throws(SimulatorError) {
            let input = try JSON.parse(text)
            if case .object = input, let value = input["op"] { op = value }
            let fields = try Fields(input)
            guard let opName = try fields.string("op") else { throw SimulatorError("missing required field 'op'") }
            let result = try perform(opName, fields)
            return (.object([("line", .number(Double(number))), ("op", op)] + result), false)
        } catch {
            return (.object([("line", .number(Double(number))), ("op", op), ("error", .string(error.message))]), true)
        }
    }

    /// Runs a whole stream: one answer per non-blank line, in order. Returns whether any line was rejected.
    public func run(lines: some Sequence<String>, emit: (String) -> Void) -> Bool {
        var rejected = false
        for (index, line) in lines.enumerated() {
            guard let answer = handle(line: line, number: index + 1) else { continue }
            rejected = rejected || answer.rejected
            emit(answer.json.serialized())
        }
        return rejected
    }

    // MARK: - Ops

    private typealias Members = [(String, JSON)]

    private func perform(_ op: String, _ f: Fields) throws(SimulatorError) -> Members {
        if op == "start" { return try start(f) }
        let known = ["policy", "device", "state", "openIn", "openURL", "composeMail", "print", "dragAndDrop",
                     "serverLog", "copy", "paste", "pasteboardRaw", "identity", "webView", "navigate",
                     "notify", "openFrom", "clock", "checkOffline", "confirm", "answer"]
        guard known.contains(op) else {
            throw SimulatorError("unknown op '\(op)'; expected one of start, \(known.joined(separator: ", "))")
        }
        guard let world else { throw SimulatorError("op '\(op)' before 'start': the first op must be start") }
        switch op {
        case "policy": return try policy(f, world)
        case "device": return try device(f, world)
        case "state": return try state(world)
        case "openIn": return try openIn(f, world)
        case "openURL": return try openURL(f, world)
        case "composeMail":
            return action(world, allowedOutcome: "opened") { $0.composeMail() }
        case "print":
            return try warnable("print", world) { question in
                world.broker.printAsking { decided in
                    question.finish(Self.actionMembers(decided, target: nil, allowedOutcome: "allowed", world))
                }
            }
        case "dragAndDrop":
            let target = try f.requiredString("target")
            return try warnable("dragAndDrop", world) { question in
                world.broker.dragAndDropAsking(to: target) { decided in
                    question.finish(Self.actionMembers(decided, target: target, allowedOutcome: "allowed", world))
                }
            }
        case "answer": return try answer(f, world)
        case "serverLog": return serverLog(world)
        case "identity": return try identity(f, world.broker)
        case "webView": return try webView(f, world.broker)
        case "navigate": return try navigate(f, world.broker)
        case "copy": return try copy(f, world)
        case "paste": return try paste(f, world)
        case "notify": return try notify(f, world)
        case "openFrom": return try openFrom(f, world)
        case "clock": return try clock(f, world)
        case "checkOffline": return try checkOffline(world)
        case "confirm": return try confirm(world)
        default: return pasteboardRaw(world)
        }
    }

    private func start(_ f: Fields) throws(SimulatorError) -> Members {
        guard world == nil else { throw SimulatorError("'start' may come only once") }
        let appID = try f.requiredString("app")
        var manifest = AppManifest()
        if let m = try f.object("manifest") {
            manifest.disableSchemeBlocking = try m.bool("MI_AC_DISABLE_SCHEME_BLOCKING") ?? false
            manifest.treatAllWebViewsAsUnmanaged = try m.bool("TreatAllWebViewsAsUnmanaged") ?? false
        }
        let implements = Set(try f.strings("implements") ?? [])
        for name in implements where !SimulatedApp.optionalCallbacks.contains(name) && name != "warnHandler" {
            throw SimulatorError("field 'implements' names unknown callback '\(name)'; expected any of "
                                 + (SimulatedApp.optionalCallbacks.sorted() + ["warnHandler"]).joined(separator: ", "))
        }
        var device = DeviceApps()
        if let value = f.object["apps"] {
            guard case .array(let items) = value else { throw SimulatorError("field 'apps' must be an array of objects") }
            for item in items { device.upsert(try deviceApp(try Fields(item), existing: nil, field: "apps")) }
        }
        let outbox: FolderOutbox
        do {
            outbox = try FolderOutbox(directory: outboxDirectory)
        } catch {
            throw SimulatorError("cannot use the outbox folder: \(error)")
        }
        let sink = RecordingReportSink()
        let pasteboard = InMemoryPasteboard()
        let custodian: InProcessKeyCustodian
        do {
            custodian = try InProcessKeyCustodian(
                entitledAppIDs: [appID] + device.all.filter(\.isAuthorizedAppConnectApp).map(\.id))
        } catch {
            throw SimulatorError("secure services could not start: \(error)")
        }
        let broker = ShareBroker(appID: appID, device: device,
                                 platform: Platform(outbox: outbox, urlOpener: RecordingURLOpener(), reportSink: sink,
                                                    pasteboard: pasteboard, secureServices: custodian),
                                 configuration: ShareBroker.Configuration(
                                    disableSchemeBlocking: manifest.disableSchemeBlocking,
                                    treatAllWebViewsAsUnmanaged: manifest.treatAllWebViewsAsUnmanaged))
        let app = SimulatedApp(implements: implements)
        let clock = ManualBootClock()
        do {
            try broker.enableOfflineTimers(clock: clock, directory: nil)
            try broker.start(delegate: app)
        } catch {
            throw SimulatorError("the library refused to start: \(error)")
        }
        // The user's time is played: the `answer` op times a question out, `clock` moves the
        // proceed lifetimes and rate windows.
        broker.setWarnTimers(manual: true)
        broker.setMonotonicClock(to: Self.warnClockBase)
        world = World(broker: broker, app: app, sink: sink, pasteboard: pasteboard, custodian: custodian, clock: clock,
                      warnHandler: implements.contains("warnHandler"))
        return [("ready", .bool(false))]
    }

    private func deviceApp(_ f: Fields, existing: DeviceApp?, field: String) throws(SimulatorError) -> DeviceApp {
        guard let id = try f.string("id") else { throw SimulatorError("missing required field '\(field).id'") }
        return DeviceApp(id: id,
                         isAppConnect: try f.bool("appConnect") ?? existing?.isAppConnect ?? false,
                         isAuthorized: try f.bool("authorized") ?? existing?.isAuthorized ?? false,
                         schemes: try f.strings("handles") ?? existing?.schemes ?? [])
    }

    private func answers(_ f: Fields) throws(SimulatorError) -> [AcknowledgedKind: Acknowledgment] {
        guard let ack = try f.object("ackWith") else { return [:] }
        guard case .object(let members) = ack.object else { return [:] }
        var out: [AcknowledgedKind: Acknowledgment] = [:]
        for (key, value) in members {
            guard let kind = AcknowledgedKind(rawValue: key) else {
                throw SimulatorError("field 'ackWith' has unknown kind '\(key)'; expected any of "
                                     + AcknowledgedKind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            guard case .string(let s) = value else {
                throw SimulatorError("field 'ackWith.\(key)' must be applied, unsupported or error:<message>")
            }
            if s == "applied" {
                out[kind] = .applied
            } else if s == "unsupported" {
                guard kind != .auth else {
                    throw SimulatorError("field 'ackWith.auth' may not be unsupported: every app must handle authorization")
                }
                out[kind] = .unsupported
            } else if s.hasPrefix("error:") {
                out[kind] = .error(String(s.dropFirst(6)))
            } else {
                throw SimulatorError("field 'ackWith.\(key)' must be applied, unsupported or error:<message>; got '\(s)'")
            }
        }
        return out
    }

    private func policy(_ f: Fields, _ w: World) throws(SimulatorError) -> Members {
        var update = PolicyUpdate()
        update.auth = try f.choice("auth", PolicyVocabulary.auth)
        update.authMessage = try f.string("authMessage")
        let whitelist = try f.strings("openInWhitelist")
        let openIn = try f.choice("openIn", ["unauthorized": "unauthorized", "authorized": "authorized",
                                             "whitelist": "whitelist", "appConnectApps": "appConnectApps"])
        switch openIn {
        case "unauthorized"?: update.openIn = .unauthorized
        case "authorized"?: update.openIn = .authorized
        case "appConnectApps"?: update.openIn = .allAppConnectApps
        case "whitelist"?:
            guard let whitelist else {
                throw SimulatorError("missing field 'openInWhitelist' (required when openIn is whitelist)")
            }
            update.openIn = .whitelist(Set(whitelist))
        default:
            if whitelist != nil {
                guard case .whitelist = w.broker.currentSnapshot.openInSetting else {
                    throw SimulatorError("field 'openInWhitelist' is given but the Open In policy is not whitelist")
                }
                update.openIn = .whitelist(Set(whitelist ?? []))
            }
        }
        if whitelist != nil, let openIn, openIn != "whitelist" {
            throw SimulatorError("field 'openInWhitelist' contradicts openIn '\(openIn)': a whitelist goes with openIn whitelist only")
        }
        update.pasteboard = try f.choice("pasteboard", PolicyVocabulary.pasteboard)
        update.print = try f.choice("print", PolicyVocabulary.print)
        update.secureFileIO = try f.choice("secureFileIO", PolicyVocabulary.secureFileIO)
        update.logLevel = try f.choice("logLevel", PolicyVocabulary.logLevel)
        update.dragAndDrop = try f.choice("dragAndDrop", PolicyVocabulary.dragAndDrop)
        update.managedBrowserRequired = try f.bool("managedBrowserRequired")
        update.config = try f.stringMap("config")
        update.clipboardExceptionLength = try f.integer("clipboardExceptionLength",
                                                        in: 0 ... PolicySnapshot.maxClipboardExceptionLength)
        update.notifications = try f.choice("notifications", PolicyVocabulary.notifications)
        update.openFrom = try openFromSetting(f, w)
        update.pasteIn = try f.choice("pasteIn", PolicyVocabulary.pasteIn)
        let accessCheck = try f.integer("offlineAccessCheckSeconds", in: 0 ... OfflinePolicy.maxSeconds)
        let wipe = try f.integer("offlineWipeSeconds", in: 0 ... OfflinePolicy.maxSeconds)
        if accessCheck != nil || wipe != nil {
            let current = w.broker.currentSnapshot.offlinePolicy
            update.offline = OfflinePolicy(accessCheckSeconds: accessCheck ?? current.accessCheckSeconds,
                                           wipeSeconds: wipe ?? current.wipeSeconds)
        }
        update.warn = try Self.warnPolicy(f)
        let answers = try answers(f)
        // Everything is validated: from here on the line is carried out.
        w.app.begin(answers: answers)
        let outcome: UpdateOutcome
        do {
            outcome = try w.broker.applyReporting(update)
        } catch {
            throw SimulatorError("the library refused the update: \(error)")
        }
        return changeResult(outcome, w) + [("wiped", .bool(outcome.wiped))]
    }

    /// `openFrom` and `openFromWhitelist`, with the same rules as `openIn` and its whitelist.
    private func openFromSetting(_ f: Fields, _ w: World) throws(SimulatorError) -> TransferSetting? {
        let whitelist = try f.strings("openFromWhitelist")
        let openFrom = try f.choice("openFrom", ["unauthorized": "unauthorized", "authorized": "authorized",
                                                 "whitelist": "whitelist", "appConnectApps": "appConnectApps"])
        if whitelist != nil, let openFrom, openFrom != "whitelist" {
            throw SimulatorError("field 'openFromWhitelist' contradicts openFrom '\(openFrom)': a whitelist goes with openFrom whitelist only")
        }
        switch openFrom {
        case "unauthorized"?: return .unauthorized
        case "authorized"?: return .authorized
        case "appConnectApps"?: return .allAppConnectApps
        case "whitelist"?:
            guard let whitelist else {
                throw SimulatorError("missing field 'openFromWhitelist' (required when openFrom is whitelist)")
            }
            return .whitelist(Set(whitelist))
        default:
            guard let whitelist else { return nil }
            guard case .whitelist = w.broker.currentSnapshot.openFromSetting else {
                throw SimulatorError("field 'openFromWhitelist' is given but the Open From policy is not whitelist")
            }
            return .whitelist(Set(whitelist))
        }
    }

    private func notify(_ f: Fields, _ w: World) throws(SimulatorError) -> Members {
        let title = try f.requiredString("title")
        let body = try f.string("body")
        w.app.begin()
        let content = w.broker.notificationContent(title: title, body: body)
        let outcome: String
        switch content.decision.action {
        case .post: outcome = "posted"
        case .postGeneric: outcome = "generic"
        case .blocked: outcome = "blocked"
        }
        return [("outcome", .string(outcome)), ("title", content.title.map(JSON.string) ?? .null),
                ("body", content.body.map(JSON.string) ?? .null),
                ("why", .string(content.decision.rule.explanation))]
    }

    private func openFrom(_ f: Fields, _ w: World) throws(SimulatorError) -> Members {
        let source = try f.optionalString("source")
        let document = try f.string("document") ?? ""
        w.app.begin()
        let result = w.broker.openFromDeciding(document, source: source)
        return [("outcome", .string(result.content == nil ? "blocked" : "accepted")),
                ("notifications", .array(w.app.notifications.map(JSON.string))),
                ("why", .string(result.decision.explanation(target: source, snapshot: w.broker.currentSnapshot)))]
    }

    private func clock(_ f: Fields, _ w: World) throws(SimulatorError) -> Members {
        let advance = try f.integer("advanceSeconds", in: 0 ... OfflinePolicy.maxSeconds)
        let wall = try f.integer("wallClockSeconds", in: -OfflinePolicy.maxSeconds ... OfflinePolicy.maxSeconds)
        guard advance != nil || wall != nil else {
            throw SimulatorError("a clock op needs 'advanceSeconds' (time passes) or 'wallClockSeconds' (the wall clock is set)")
        }
        if let advance { w.clock.advance(.seconds(advance)) }
        if let wall { w.clock.setWallClock(by: .seconds(wall)) }
        let sinceBoot = w.clock.now().sinceBoot.components
        w.broker.setMonotonicClock(to: Self.warnClockBase &+ UInt64(max(sinceBoot.seconds, 0)) &* 1_000_000_000
                                   &+ UInt64(max(sinceBoot.attoseconds, 0) / 1_000_000_000))
        return [("sinceBootSeconds", .number(Double(w.clock.now().sinceBoot.components.seconds)))]
    }

    private func checkOffline(_ w: World) throws(SimulatorError) -> Members {
        w.app.begin()
        let state: OfflineState
        do {
            state = try w.broker.checkOfflineTimers()
        } catch {
            throw SimulatorError("the offline timers failed: \(error)")
        }
        let outcome: String
        var elapsed: Duration?
        switch state {
        case .confirmed(let e): outcome = "confirmed"; elapsed = e
        case .accessCheckDue(let e): outcome = "accessCheckDue"; elapsed = e
        case .wiped(let e): outcome = "wiped"; elapsed = e
        }
        return [("outcome", .string(outcome)),
                ("elapsedSeconds", elapsed.map { .number(Double($0.components.seconds)) } ?? .null),
                ("notifications", .array(w.app.notifications.map(JSON.string))),
                ("why", .string(outcome == "confirmed" ? "the policy was confirmed within the periods (or no timer applies)"
                                : w.broker.currentSnapshot.authMessage))]
    }

    private func confirm(_ w: World) throws(SimulatorError) -> Members {
        w.app.begin()
        do {
            try w.broker.confirmPolicy()
        } catch {
            throw SimulatorError("the confirmation failed: \(error)")
        }
        return [("notifications", .array(w.app.notifications.map(JSON.string)))]
    }

    private func device(_ f: Fields, _ w: World) throws(SimulatorError) -> Members {
        let services = try f.choice("secureServices", ["available": SecureServicesAvailability.available,
                                                       "unavailable": .unavailable])
        let appFields = try f.object("app")
        guard services != nil || appFields != nil else {
            throw SimulatorError("a device op needs 'secureServices' or 'app'")
        }
        var app: DeviceApp?
        if let appFields {
            let id = try appFields.string("id")
            app = try deviceApp(appFields, existing: id.flatMap { w.broker.currentSnapshot.device[$0] }, field: "app")
        }
        let answers = try answers(f)
        w.app.begin(answers: answers)
        var combined = UpdateOutcome(generation: 0)
        do {
            if let services {
                w.custodian.setAvailability(services)
                let o = try w.broker.setSecureServices(services)
                combined.changes += o.changes
                combined.acknowledgments += o.acknowledgments
            }
            if let app {
                // The custodian follows the device: only authorized AppConnect apps hold keys, and
                // an app that loses its authorization forces a new key it never receives.
                let had = w.custodian.isEntitled(appID: app.id)
                if app.isAuthorizedAppConnectApp && !had {
                    w.custodian.entitle(appID: app.id)
                } else if !app.isAuthorizedAppConnectApp && had && app.id != w.broker.appID {
                    try? w.custodian.revoke(appID: app.id)
                }
                let o = try w.broker.updateDevice(app)
                combined.changes += o.changes
                combined.acknowledgments += o.acknowledgments
            }
        } catch {
            throw SimulatorError("the library refused the device change: \(error)")
        }
        return changeResult(combined, w)
    }

    private func changeResult(_ outcome: UpdateOutcome, _ w: World) -> Members {
        let acks = outcome.acknowledgments.map { ($0.kind.rawValue, JSON.string(Self.name(of: $0.state))) }
        return [("notifications", .array(w.app.notifications.map(JSON.string))), ("acks", .object(acks))]
    }

    private static func name(of state: PolicyState) -> String {
        switch state {
        case .applied: "applied"
        case .error: "error"
        case .unsupported: "unsupported"
        }
    }

    private func state(_ w: World) throws(SimulatorError) -> Members {
        let p: PolicySnapshot
        do {
            p = try w.broker.policy()
        } catch {
            throw SimulatorError("'state' is not allowed before the first policy: the library is not ready")
        }
        return [
            ("ready", .bool(p.isReady)),
            ("authState", .string(Names.auth[p.authState] ?? "")),
            ("authMessage", .string(p.authMessage)),
            ("openInPolicy", .string(Names.openIn[p.openInPolicy] ?? "")),
            ("openInWhitelist", .array(p.openInWhitelist.sorted().map(JSON.string))),
            ("pasteboardPolicy", .string(Names.pasteboard[p.pasteboardPolicy] ?? "")),
            ("printPolicy", .string(p.printPolicy == .authorized ? "authorized" : "unauthorized")),
            ("secureFileIOPolicy", .string(p.secureFileIOPolicy == .required ? "required" : "optional")),
            ("secureServices", .string(p.secureServices == .available ? "available" : "unavailable")),
            ("logLevel", .string(Names.logLevel[p.logLevel] ?? "")),
            ("dragAndDrop", .string(Names.dragAndDrop[p.dragAndDropPolicy] ?? "")),
            ("managedBrowserRequired", .bool(p.managedBrowserRequired)),
            ("config", .object(p.config.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })),
            ("copyEnabled", .bool(p.copyEnabled)),
            ("openInEnabled", .bool(p.openInEnabled)),
            ("generation", .number(Double(p.generation))),
        ]
    }

    private func openIn(_ f: Fields, _ w: World) throws(SimulatorError) -> Members {
        let name = try f.requiredString("document")
        let target = try f.requiredString("target")
        let channel = try f.choice("via", ["documentInteraction": TransferChannel.documentInteraction,
                                           "previewController": .previewController,
                                           "activitySheet": .activitySheet]) ?? .documentInteraction
        let bytes: [UInt8]
        if let text = try f.string("content") {
            bytes = Array(text.utf8)
        } else if let encoded = try f.string("contentBase64") {
            guard let data = Data(base64Encoded: encoded) else {
                throw SimulatorError("field 'contentBase64' is not valid base64")
            }
            bytes = Array(data)
        } else {
            throw SimulatorError("missing required field 'content' (or 'contentBase64')")
        }
        let outbox = w.broker.platform.outbox
        return try warnable("openIn", w) { question in
            w.broker.openInAsking(documentNamed: name, target: target, via: channel, handOff: { request throws(ShareBrokerError) in
                try outbox.handOver(name: request.name, bytes: request.delivers ? bytes : DummyFile.contents)
            }, completion: { result in
                switch result {
                case .success(let transfer):
                    question.finish([("outcome", .string(transfer.delivered ? "delivered" : "dummy")), ("path", .string(transfer.path)),
                                     ("notifications", .array(w.app.notifications.map(JSON.string))),
                                     ("why", .string(transfer.outcome.map(Self.warnWhy)
                                                     ?? transfer.decision.explanation(target: target, snapshot: w.broker.currentSnapshot)))]
                                    + Self.warnMembers(transfer.outcome, w))
                case .failure(let error):
                    question.finish([("outcome", .string("failed")), ("error", .string("field 'document': \(error)"))])
                }
            })
        }
    }

    private func openURL(_ f: Fields, _ w: World) throws(SimulatorError) -> Members {
        let url = try f.requiredString("url")
        do {
            _ = try URLRules.decide(url: url, in: w.broker.currentSnapshot)
        } catch .webScheme(let scheme) {
            throw SimulatorError("field 'url': \(scheme): URLs are not covered by version 1 of the simulator")
        } catch {
            throw SimulatorError("field 'url': \(error)")
        }
        w.app.begin()
        let result: URLDecision
        do {
            result = try w.broker.openURL(url)
        } catch {
            throw SimulatorError("field 'url': \(error)")
        }
        return [("outcome", .string(result.outcome.rawValue)), ("handler", result.handler.map(JSON.string) ?? .null),
                ("notifications", .array(w.app.notifications.map(JSON.string))),
                ("why", .string(result.decision.explanation(target: result.intendedHandler, snapshot: w.broker.currentSnapshot)))]
    }

    /// An action's result; `allowedOutcome` is the contract's word for "allowed" (`composeMail`
    /// answers `opened`, `print` and `dragAndDrop` answer `allowed`).
    private func action(_ w: World, target: String? = nil, allowedOutcome: String = "allowed",
                        _ body: (ShareBroker) -> Decision) -> Members {
        w.app.begin()
        let result = body(w.broker)
        return [("outcome", .string(result.allowed ? allowedOutcome : "blocked")),
                ("notifications", .array(w.app.notifications.map(JSON.string))),
                ("why", .string(result.explanation(target: target, snapshot: w.broker.currentSnapshot)))]
    }

    /// The result of a print or a drop, warned or not.
    static func actionMembers(_ decided: WarnedDecision, target: String?, allowedOutcome: String, _ w: World) -> [(String, JSON)] {
        [("outcome", .string(decided.allowed ? allowedOutcome : "blocked")),
         ("notifications", .array(w.app.notifications.map(JSON.string))),
         ("why", .string(decided.outcome.map(Self.warnWhy)
                         ?? decided.decision.explanation(target: target, snapshot: w.broker.currentSnapshot)))]
            + warnMembers(decided.outcome, w)
    }

    private func serverLog(_ w: World) -> Members {
        let acks = w.sink.acknowledgments.map { record in
            JSON.object([("kind", .string(record.kind.rawValue)), ("state", .string(Self.name(of: record.state))),
                         ("message", .string(record.message))])
        }
        return [("acks", .array(acks)), ("warned", .array(w.sink.warnedAttempts.map(Self.warnedJSON)))]
    }
}

/// The contract's names for policy values (``PolicyVocabulary``, by value).
enum Names {
    static let auth = Dictionary(uniqueKeysWithValues: PolicyVocabulary.auth.map { ($0.1, $0.0) })
    static let openIn = Dictionary(uniqueKeysWithValues: PolicyVocabulary.openIn.map { ($0.1, $0.0) })
    static let pasteboard = Dictionary(uniqueKeysWithValues: PolicyVocabulary.pasteboard.map { ($0.1, $0.0) })
    static let logLevel = Dictionary(uniqueKeysWithValues: PolicyVocabulary.logLevel.map { ($0.1, $0.0) })
    static let dragAndDrop = Dictionary(uniqueKeysWithValues: PolicyVocabulary.dragAndDrop.map { ($0.1, $0.0) })
}

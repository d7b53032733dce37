#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PropertyBased
import ShareBroker
import ShareBrokerLinux
import Testing

/// End to end through GIO: real desktop entries of recording apps in a temporary XDG tree.
@Suite("Desktop hand-offs through GIO", .serialized,
       .enabled(if: DesktopFixture.shared.available == nil, "the XDG test tree could not be made"))
struct DesktopHandOffTests {
    let fixture = DesktopFixture.shared
    static let whitelist: TransferSetting = .whitelist(["org.example.Recorder", "org.example.Sheets"])

    func handOff() throws -> DesktopHandOff {
        try DesktopHandOff(runtimeDirectory: fixture.runtime)
    }

    // MARK: Resolution through the XDG data folders

    @Test func resolvesDesktopIDsExactlyThroughXDGDataHome() throws {
        let entry = try GIODesktop().entry(for: "org.example.Recorder")
        #expect(entry.path == fixture.root + "/data/applications/org.example.Recorder.desktop")
        #expect(entry.commandLine.contains("record-file"))
        #expect(throws: DesktopHandOffError.unknownApp("org.example.RECORDER")) {
            try GIODesktop().entry(for: "org.example.RECORDER")
        }
        #expect(GIODesktop().handler(forScheme: "sheets") == "org.example.Sheets")
        #expect(GIODesktop().handler(forScheme: "mailto") == "org.example.Mail")
        #expect(GIODesktop().handler(forScheme: "nosuchscheme") == nil)
    }

    @Test func flatpakExportsAreFoundWhenTheyAreNotOnXDGDataDirs() throws {
        let entry = try GIODesktop().entry(for: "org.example.Flatpak")
        #expect(entry.path == fixture.root + "/data/flatpak/exports/share/applications/org.example.Flatpak.desktop")
        let session = try DesktopBroker(openIn: .whitelist(["org.example.Flatpak"]))
        let bytes = Array("to a sandboxed app".utf8)
        let path = try fixture.document(named: "sandboxed.txt", bytes: bytes)
        let before = fixture.recordNames("org.example.Flatpak")
        let result = try handOff().openIn(file: path, target: "org.example.Flatpak", broker: session.broker)
        // The copy is in the folder Flatpak shares with the app's sandbox: $XDG_RUNTIME_DIR/app/<id>.
        #expect(result.transfer.path.hasPrefix(fixture.runtime + "/app/org.example.Flatpak/"))
        let stem = try #require(fixture.waitForLaunch(of: "org.example.Flatpak", after: before))
        #expect(fixture.record("org.example.Flatpak", stem, "data") == bytes)
    }

    @Test func theSchemeLookupAgreesWithXdgMime() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/xdg-mime") else { return }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/xdg-mime")
        p.arguments = ["query", "default", "x-scheme-handler/sheets"]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        p.waitUntilExit()
        let answer = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(answer == "org.example.Sheets.desktop")
        #expect(GIODesktop().handler(forScheme: "sheets").map { $0 + ".desktop" } == answer)
    }

    // MARK: Document interaction

    @Test func anAllowedTargetIsStartedWithAPrivateCopyOfTheExactBytes() throws {
        let session = try DesktopBroker(openIn: Self.whitelist)
        let bytes = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let path = try fixture.document(named: "Quarterly report.txt", bytes: bytes)
        let before = fixture.recordNames("org.example.Recorder")
        let result = try handOff().openIn(file: path, target: "org.example.Recorder", broker: session.broker)
        #expect(result.transfer.delivered)
        #expect(result.started == "org.example.Recorder")
        let copy = result.transfer.path
        #expect(copy.hasPrefix(fixture.runtime + "/app/org.example.Recorder/sharebroker-"))
        #expect(copy.hasSuffix("/Quarterly report.txt"))
        #expect(copy != path)
        var st = stat()
        #expect(stat(copy, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        #expect(stat((copy as NSString).deletingLastPathComponent, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o700)
        let stem = try #require(fixture.waitForLaunch(of: "org.example.Recorder", after: before))
        #expect(fixture.record("org.example.Recorder", stem, "data") == bytes)
        #expect(fixture.record("org.example.Recorder", stem, "path") == Array(copy.utf8))
        #expect(session.callbacks.calls.isEmpty)
    }

    @Test func aBlockedTargetIsStartedWithAnEmptyMangledDummyAndTheCallbackFires() throws {
        let session = try DesktopBroker(openIn: Self.whitelist)
        let path = try fixture.document(named: "secret-plan.txt", bytes: Array("top secret content".utf8))
        let before = fixture.recordNames("org.example.Other")
        let result = try handOff().openIn(file: path, target: "org.example.Other", broker: session.broker)
        #expect(!result.transfer.delivered)
        #expect(result.transfer.decision.rule == .notInWhitelist)
        #expect(session.callbacks.calls == ["openInBlocked"])
        #expect(session.sink.blockedAttempts.map(\.target) == ["org.example.Other"])
        let stem = try #require(fixture.waitForLaunch(of: "org.example.Other", after: before))
        #expect(fixture.record("org.example.Other", stem, "data") == [])
        let received = String(decoding: fixture.record("org.example.Other", stem, "path") ?? [], as: UTF8.self)
        #expect(received.hasSuffix("." + DummyFile.fileExtension))
        #expect(!received.contains("secret"))
    }

    @Test(arguments: ["org.example.recorder", "org.example.Record"])
    func aCaseVariantOrPrefixOfAWhitelistedIDIsBlocked(target: String) throws {
        let session = try DesktopBroker(openIn: Self.whitelist)
        let bytes = Array("whitelisted only for the exact id".utf8)
        let path = try fixture.document(named: "notes.txt", bytes: bytes)
        let before = fixture.recordNames(target)
        let result = try handOff().openIn(file: path, target: target, broker: session.broker)
        #expect(!result.transfer.delivered)
        #expect(result.transfer.decision.rule == .notInWhitelist)
        let stem = try #require(fixture.waitForLaunch(of: target, after: before))
        #expect(fixture.record(target, stem, "data") == [])
    }

    @Test func blockedAndNonWhitelistedTargetsNeverReceiveAnEightByteRunOrTheName() async throws {
        let names = Gen.letterOrNumber.string(of: 8...24)
        let contents = Gen.uint8().array(of: 8...512)
        let desktop = try handOff()
        let fixture = self.fixture
        await propertyCheck(count: 12, input: names, contents, Gen.bool) { stem, bytes, unauthorized in
            do {
                let session = try DesktopBroker(openIn: unauthorized ? .unauthorized : Self.whitelist)
                let name = stem + ".txt"
                let path = try fixture.document(named: name, bytes: bytes)
                let before = fixture.recordNames("org.example.Other")
                let result = try desktop.openIn(file: path, target: "org.example.Other", broker: session.broker)
                #expect(!result.transfer.delivered)
                let record = try #require(fixture.waitForLaunch(of: "org.example.Other", after: before))
                let received = try #require(fixture.record("org.example.Other", record, "data"))
                let receivedPath = try #require(fixture.record("org.example.Other", record, "path"))
                #expect(received.isEmpty)
                let nameBytes = Array(name.utf8)
                for start in 0...(nameBytes.count - 8) {
                    #expect(!receivedPath.containsRun(nameBytes[start..<start + 8]))
                }
                for start in stride(from: 0, through: bytes.count - 8, by: 1) {
                    #expect(!received.containsRun(bytes[start..<start + 8]) && !receivedPath.containsRun(bytes[start..<start + 8]))
                }
                #expect(session.callbacks.calls == ["openInBlocked"])
            } catch {
                Issue.record("hand-off failed: \(error)")
            }
        }
    }

    // MARK: The channel that cannot know the target

    @Test func theUnknownTargetChannelGivesTheDesktopsPickTheDocumentWhenAuthorized() throws {
        let session = try DesktopBroker(openIn: .authorized)
        let bytes = Array("picked by the desktop".utf8)
        let path = try fixture.document(named: "letter.txt", bytes: bytes)
        let before = fixture.recordNames("org.example.Picker")
        let result = try handOff().openIn(file: path, target: "ignored", via: .activitySheet, broker: session.broker)
        #expect(result.started == "org.example.Picker")
        let stem = try #require(fixture.waitForLaunch(of: "org.example.Picker", after: before))
        #expect(fixture.record("org.example.Picker", stem, "data") == bytes)
    }

    @Test func theUnknownTargetChannelGivesADummyWhenUnauthorized() throws {
        let session = try DesktopBroker(openIn: .unauthorized)
        let path = try fixture.document(named: "letter.txt", bytes: Array("never leaves".utf8))
        let before = fixture.recordNames("org.example.Picker")
        let result = try handOff().openIn(file: path, target: "ignored", via: .activitySheet, broker: session.broker)
        #expect(!result.transfer.delivered)
        let stem = try #require(fixture.waitForLaunch(of: "org.example.Picker", after: before))
        #expect(fixture.record("org.example.Picker", stem, "data") == [])
        #expect(session.callbacks.calls == ["openInBlocked"])
    }

    @Test func theUnknownTargetChannelUnderAWhitelistStartsNothing() throws {
        let session = try DesktopBroker(openIn: .whitelist(["org.example.Picker", "org.example.Recorder"]))
        let path = try fixture.document(named: "letter.txt", bytes: Array("stays here".utf8))
        let before = fixture.recordNames("org.example.Picker")
        let pickerFolder = fixture.runtime + "/app/org.example.Picker"
        let foldersBefore = (try? FileManager.default.contentsOfDirectory(atPath: pickerFolder)) ?? []
        let result = try handOff().openIn(file: path, target: "ignored", via: .activitySheet, broker: session.broker)
        #expect(!result.transfer.delivered)
        #expect(result.transfer.decision.rule == .activitySheetUnderWhitelist)
        #expect(result.started == nil)
        #expect(result.transfer.path.isEmpty)
        #expect(session.callbacks.calls == ["openInBlocked"])
        usleep(500_000)
        #expect(fixture.recordNames("org.example.Picker") == before)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: pickerFolder)) ?? []) == foldersBefore)
    }

    // MARK: Bad input starts nothing

    @Test func badInputGetsAClearErrorAndStartsNothing() throws {
        let session = try DesktopBroker(openIn: .authorized)
        let path = try fixture.document(named: "doc.txt", bytes: Array("content".utf8))
        let desktop = try handOff()
        let before = fixture.recordNames("org.example.Recorder")

        #expect(throws: DesktopHandOffError.unknownApp("org.example.Missing")) {
            try desktop.openIn(file: path, target: "org.example.Missing", broker: session.broker)
        }
        #expect(throws: DesktopHandOffError.invalidAppID("../../bin/sh")) {
            try desktop.openIn(file: path, target: "../../bin/sh", broker: session.broker)
        }
        do {
            _ = try desktop.openIn(file: path, target: "org.example.Broken", broker: session.broker)
            Issue.record("an unparsable entry was accepted")
        } catch {
            guard case .unparsableEntry(let id, _, let reason) = error else { Issue.record("got \(error)"); return }
            #expect(id == "org.example.Broken")
            #expect(!reason.isEmpty)
            #expect(error.description.contains("does not parse"))
        }
        do {
            _ = try desktop.openIn(file: path, target: "org.example.NoExec", broker: session.broker)
            Issue.record("an entry without Exec was accepted")
        } catch {
            guard case .noExec(let id, _) = error else { Issue.record("got \(error)"); return }
            #expect(id == "org.example.NoExec")
        }
        for bad in ["a/b.txt", "..", ".", ""] {
            #expect(throws: DesktopHandOffError.invalidDocumentName) {
                try desktop.openIn(file: path, named: bad, target: "org.example.Recorder", broker: session.broker)
            }
        }
        #expect(throws: DesktopHandOffError.invalidDocumentName) {
            try desktop.openIn([1], named: "../escape.txt", target: "org.example.Recorder",
                               broker: session.broker)
        }
        let vanished = try fixture.document(named: "gone.txt", bytes: Array("soon gone".utf8))
        try FileManager.default.removeItem(atPath: vanished)
        #expect(throws: DesktopHandOffError.documentUnreadable(errno: ENOENT)) {
            try desktop.openIn(file: vanished, target: "org.example.Recorder", broker: session.broker)
        }
        let fifo = fixture.root + "/docs/fifo-\(UInt32.random(in: 0 ... .max))"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: DesktopHandOffError.documentNotRegular) {
            try desktop.openIn(file: fifo, target: "org.example.Recorder", broker: session.broker)
        }
        #expect(session.callbacks.calls.isEmpty)
        #expect(session.sink.blockedAttempts.isEmpty)
        usleep(300_000)
        #expect(fixture.recordNames("org.example.Recorder") == before)
    }

    @Test func issue31AHiddenEntryIsAnErrorAndNeverStarts() throws {
        let path = try fixture.document(named: "doc.txt", bytes: Array("content".utf8))
        for auth in [TransferSetting.authorized, .unauthorized] {
            let session = try DesktopBroker(openIn: auth)
            let desktop = try handOff()
            do {
                _ = try desktop.openIn(file: path, target: "org.example.Hidden", broker: session.broker)
                Issue.record("a Hidden=true entry was started")
            } catch {
                guard case .hiddenEntry(let id, _) = error else { Issue.record("got \(error)"); continue }
                #expect(id == "org.example.Hidden")
                #expect(error.description.contains("Hidden=true"))
            }
            #expect(session.callbacks.calls.isEmpty, "nothing was decided")
        }
        // As a scheme's default handler: never started, whatever GIO answers for the default.
        let session = try DesktopBroker(openIn: .authorized)
        let decision = try session.broker.openURL("hiddenscheme:x")
        #expect(session.opener.started.isEmpty)
        if decision.outcome == .opened {
            #expect(session.opener.failures.map(\.handler) == ["org.example.Hidden"])
        }
        usleep(300_000)
        #expect(fixture.recordNames("org.example.Hidden").isEmpty)
    }

    @Test func issue31AFileOnlySchemeHandlerIsNotStartedWithoutTheURL() throws {
        let session = try DesktopBroker(openIn: .authorized)
        let decision = try session.broker.openURL("fileonly:open?row=1")
        #expect(decision.handler == "org.example.FileOnly")
        #expect(session.opener.started.isEmpty)
        #expect(session.opener.failures.map(\.error) == [.cannotTakeURL(appID: "org.example.FileOnly",
                                                                          path: fixture.root + "/data/applications/org.example.FileOnly.desktop")])
        #expect(session.opener.failures.first?.error.description.contains("%u") == true)
        usleep(300_000)
        #expect(fixture.recordNames("org.example.FileOnly").isEmpty)
    }

    @Test func issue31ADocumentWhoseNameIsNotUTF8IsHandedOverUnderItsOwnBytes() throws {
        let session = try DesktopBroker(openIn: .authorized)
        let desktop = try handOff()
        // "café.txt" in Latin-1: 0xE9 is not UTF-8.
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".txt".utf8)
        let folder = fixture.root + "/latin1-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = Array(folder.utf8) + [UInt8(ascii: "/")] + name
        let bytes = Array("menu du jour".utf8)
        let fd = open(path.map { CChar(bitPattern: $0) } + [0], O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(fd >= 0)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let before = fixture.recordNames("org.example.Recorder")
        let result = try desktop.openIn(filePath: path, target: "org.example.Recorder", broker: session.broker)
        #expect(result.transfer.delivered)
        #expect(result.pathBytes.count > name.count && Array(result.pathBytes.suffix(name.count + 1)) == [UInt8(ascii: "/")] + name,
                "the copy keeps the name's bytes")
        var st = stat()
        #expect(lstat(result.pathBytes.map { CChar(bitPattern: $0) } + [0], &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG)
        #expect(Int(st.st_size) == bytes.count)
        let stem = try #require(fixture.waitForLaunch(of: "org.example.Recorder", after: before))
        #expect(fixture.record("org.example.Recorder", stem, "data") == bytes, "the app got the document under its real name")
        #expect(fixture.record("org.example.Recorder", stem, "path").map { Array($0.suffix(name.count)) } == name)
        // Blocked, the dummy's name carries nothing of the original.
        let blocked = try DesktopBroker(openIn: .unauthorized)
        let beforeDummy = fixture.recordNames("org.example.Recorder")
        let dummy = try desktop.openIn(filePath: path, target: "org.example.Recorder", broker: blocked.broker)
        #expect(!dummy.transfer.delivered)
        // Waited for, so the next test's launches are its own.
        #expect(fixture.waitForLaunch(of: "org.example.Recorder", after: beforeDummy) != nil)
        #expect(!dummy.pathBytes.contains(0xE9))
        #expect(!DesktopHandOff.isValidDocumentName([UInt8]("a/b".utf8)) && DesktopHandOff.isValidDocumentName(name))
    }

    @Test func issue31ADocumentGivenAsALinkIsHandedOverOnceFromItsTarget() throws {
        let session = try DesktopBroker(openIn: .authorized)
        let desktop = try handOff()
        // A Documents folder on another disk: the user's path goes through a folder link and ends
        // in a file link.
        let bytes = Array("the linked report".utf8)
        let target = try fixture.document(named: "report.txt", bytes: bytes)
        let home = fixture.root + "/home-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: home + "/Documents",
                                                   withDestinationPath: (target as NSString).deletingLastPathComponent)
        try FileManager.default.createSymbolicLink(atPath: home + "/latest.txt", withDestinationPath: home + "/Documents/report.txt")
        for path in [home + "/Documents/report.txt", home + "/latest.txt"] {
            let before = fixture.recordNames("org.example.Recorder")
            let result = try desktop.openIn(file: path, target: "org.example.Recorder", broker: session.broker)
            #expect(result.transfer.delivered)
            var st = stat()
            #expect(lstat(result.transfer.path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG, "a copy, not a link")
            #expect(FileManager.default.contents(atPath: result.transfer.path).map(Array.init) == bytes)
            let stem = try #require(fixture.waitForLaunch(of: "org.example.Recorder", after: before))
            #expect(fixture.record("org.example.Recorder", stem, "data") == bytes)
        }
        // A link into the broker's own folders (another app's private copy) is refused.
        let beforeOther = fixture.recordNames("org.example.Other")
        let handedOver = try desktop.openIn(file: target, target: "org.example.Other", broker: session.broker)
        #expect(fixture.waitForLaunch(of: "org.example.Other", after: beforeOther) != nil)
        let intoBroker = home + "/peek.txt"
        try FileManager.default.createSymbolicLink(atPath: intoBroker, withDestinationPath: handedOver.transfer.path)
        let before = fixture.recordNames("org.example.Recorder")
        #expect(throws: DesktopHandOffError.documentInBrokerFolder) {
            try desktop.openIn(file: intoBroker, target: "org.example.Recorder", broker: session.broker)
        }
        // A dangling link says the target is missing.
        let dangling = home + "/dangling.txt"
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: home + "/nowhere.txt")
        #expect(throws: DesktopHandOffError.documentUnreadable(errno: ENOENT)) {
            try desktop.openIn(file: dangling, target: "org.example.Recorder", broker: session.broker)
        }
        usleep(300_000)
        #expect(fixture.recordNames("org.example.Recorder") == before)
    }

    // MARK: URL schemes and mail through the real associations

    @Test func aCustomSchemeGoesToItsAssociationUnderTheOpenInRules() throws {
        let allowed = try DesktopBroker(openIn: Self.whitelist)
        let before = fixture.recordNames("org.example.Sheets")
        let decision = try allowed.broker.openURL("sheets:open?row=1")
        #expect(decision.outcome == .opened)
        #expect(decision.handler == "org.example.Sheets")
        let stem = try #require(fixture.waitForLaunch(of: "org.example.Sheets", after: before))
        #expect(fixture.record("org.example.Sheets", stem, "url") == Array("sheets:open?row=1".utf8))

        let blocked = try DesktopBroker(openIn: .whitelist(["org.example.Recorder"]))
        let refused = try blocked.broker.openURL("sheets:open?row=2")
        #expect(refused.outcome == .blocked)
        #expect(refused.intendedHandler == "org.example.Sheets")
        #expect(blocked.opener.started.isEmpty)
        #expect(blocked.callbacks.calls == ["openURLBlocked"])

        let unhandled = try allowed.broker.openURL("nosuchscheme:x")
        #expect(unhandled.outcome == .unhandled)
        #expect(allowed.opener.started == ["org.example.Sheets"])
    }

    @Test func mailtoFollowsTheSeedRulesThroughTheMailtoAssociation() throws {
        // Native mail (the device's configured ids) whitelisted: the mailto handler opens.
        let whitelisted = try DesktopBroker(openIn: .whitelist(["org.example.Mail"]))
        var before = fixture.recordNames("org.example.Mail")
        #expect(try whitelisted.broker.openURL("mailto:a@example.org").outcome == .opened)
        var stem = try #require(fixture.waitForLaunch(of: "org.example.Mail", after: before))
        #expect(fixture.record("org.example.Mail", stem, "url") == Array("mailto:a@example.org".utf8))

        // Two native mail ids: the whitelist must hold both.
        let half = try DesktopBroker(openIn: .whitelist(["org.example.Mail"]),
                                     nativeMail: NativeMail(ids: ["org.example.Mail", "org.example.MailActivity"],
                                                            launchID: "org.example.Mail"))
        let halfDecision = try half.broker.openURL("mailto:b@example.org")
        #expect(halfDecision.outcome == .blocked)
        #expect(halfDecision.decision.rule == .nativeMailNotWhitelisted)
        #expect(half.opener.started.isEmpty)
        #expect(half.callbacks.calls == ["openURLBlocked"])

        // MI_AC_DISABLE_SCHEME_BLOCKING lets mailto reach native mail anyway.
        let disabled = try DesktopBroker(openIn: .unauthorized, config: [ServerConfigKey.disableSchemeBlocking: "true"])
        before = fixture.recordNames("org.example.Mail")
        let override = try disabled.broker.openURL("mailto:c@example.org")
        #expect(override.outcome == .opened)
        #expect(override.decision.rule == .schemeBlockingDisabled)
        stem = try #require(fixture.waitForLaunch(of: "org.example.Mail", after: before))
        #expect(fixture.record("org.example.Mail", stem, "url") == Array("mailto:c@example.org".utf8))

        // A registered, authorized managed app that handles mailto takes it over, no callback.
        let managed = DeviceApp(id: "org.example.ManagedMail", isAppConnect: true, isAuthorized: true, schemes: ["mailto"])
        let takeover = try DesktopBroker(openIn: .whitelist(["org.example.Recorder"]), apps: [managed])
        before = fixture.recordNames("org.example.ManagedMail")
        let taken = try takeover.broker.openURL("mailto:d@example.org")
        #expect(taken.outcome == .opened)
        #expect(taken.decision.rule == .appConnectMailApp)
        #expect(takeover.callbacks.calls.isEmpty)
        stem = try #require(fixture.waitForLaunch(of: "org.example.ManagedMail", after: before))
        #expect(fixture.record("org.example.ManagedMail", stem, "url") == Array("mailto:d@example.org".utf8))

        // The same app, unauthorized, does not take over.
        let unauthorizedApp = DeviceApp(id: "org.example.ManagedMail", isAppConnect: true, isAuthorized: false, schemes: ["mailto"])
        let none = try DesktopBroker(openIn: .unauthorized, apps: [unauthorizedApp])
        #expect(try none.broker.openURL("mailto:e@example.org").outcome == .blocked)
        #expect(none.opener.started.isEmpty)
        #expect(none.callbacks.calls == ["openURLBlocked"])
    }

    @Test func aHandlerWithoutADesktopEntryIsRecordedAsAFailureAndNothingStarts() throws {
        // The device registers a managed mail app the desktop does not have: the takeover is
        // decided, but the launch fails with a clear error, kept by the opener.
        let ghost = DeviceApp(id: "org.example.Ghost", isAppConnect: true, isAuthorized: true, schemes: ["mailto"])
        let session = try DesktopBroker(openIn: .unauthorized, apps: [ghost])
        let before = fixture.recordNames("org.example.Mail")
        let decision = try session.broker.openURL("mailto:g@example.org")
        #expect(decision.outcome == .opened)
        #expect(decision.handler == "org.example.Ghost")
        #expect(session.opener.started.isEmpty)
        #expect(session.opener.failures.map(\.handler) == ["org.example.Ghost"])
        #expect(session.opener.failures.map(\.error) == [.unknownApp("org.example.Ghost")])
        usleep(300_000)
        #expect(fixture.recordNames("org.example.Mail") == before)
    }

    @Test func aMailtoHandlerThatIsNotNativeMailIsAnOrdinaryTargetAndGetsNoOverride() throws {
        // The device names other ids as native mail: the desktop's mailto handler is then an
        // ordinary Open In target, and MI_AC_DISABLE_SCHEME_BLOCKING does not cover it.
        let session = try DesktopBroker(openIn: .unauthorized, config: [ServerConfigKey.disableSchemeBlocking: "true"],
                                        nativeMail: NativeMail(ids: ["org.gnome.Evolution"], launchID: "org.gnome.Evolution"))
        let decision = try session.broker.openURL("mailto:f@example.org")
        #expect(decision.outcome == .blocked)
        #expect(decision.intendedHandler == "org.example.Mail")
        #expect(session.opener.started.isEmpty)
    }
}

extension Array where Element == UInt8 {
    func containsRun(_ run: ArraySlice<UInt8>) -> Bool {
        guard run.count <= count else { return false }
        for start in 0...(count - run.count) where self[start..<start + run.count].elementsEqual(run) { return true }
        return false
    }
}

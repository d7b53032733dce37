import Foundation
import ShareBrokerSimulator
import Testing

/// The version 1 additions of issue 18: optional `policy` fields (`clipboardExceptionLength`,
/// `notifications`, `openFrom`, `openFromWhitelist`, `pasteIn`), the ops `notify` and `openFrom`,
/// and `copy` with `as`. Lines without them answer as before.
@Suite("Simulator: character exception, notifications, Open From, paste-in")
struct InboundAndNotificationSimulatorTests {
    static let start = #"{"op":"start","app":"com.acme.notes","implements":["openFromAttemptedWhenBlocked","copyAttemptedWhenUnauthorized"],"apps":[{"id":"com.acme.viewer","appConnect":true,"authorized":true},{"id":"org.example.sheets"}]}"#

    @Test("the character-count exception: N characters written in the clear, N+1 follow the policy")
    func characterException() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"unauthorized","clipboardExceptionLength":3}"#)
        let short = s.send(#"{"op":"copy","text":"e\u0301👍🏽中"}"#)
        #expect(short["outcome"]?.string == "written")
        #expect(short["why"]?.string?.contains("character-count exception") == true)
        #expect(s.send(#"{"op":"paste","as":"org.example.sheets"}"#)["text"]?.string == "e\u{301}👍🏽中")
        let long = s.send(#"{"op":"copy","text":"abcd"}"#)
        #expect(long["outcome"]?.string == "blocked")
        #expect(long["notifications"]?.strings == ["copyAttemptedWhenUnauthorized"])
        #expect(s.send(#"{"op":"policy","clipboardExceptionLength":-1}"#)["error"]?.string?.contains("clipboardExceptionLength") == true)
        #expect(s.send(#"{"op":"policy","clipboardExceptionLength":65536}"#)["error"] != nil)
        #expect(s.send(#"{"op":"copy","text":"abc"}"#)["outcome"]?.string == "written", "the rejected lines changed nothing")
    }

    @Test("issue 31.18: a null source is an unknown source, as an absent one; an empty 'as' is refused and changes nothing")
    func nullSourceAndEmptyWriter() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"authorized","openFrom":"whitelist","openFromWhitelist":["com.acme.viewer"]}"#)
        let absent = s.send(#"{"op":"openFrom","document":"a.pdf"}"#)
        let null = s.send(#"{"op":"openFrom","source":null,"document":"a.pdf"}"#)
        #expect(null["error"] == nil)
        #expect(null["outcome"] == absent["outcome"] && null["why"] == absent["why"])
        #expect(null["why"]?.string?.contains("source app is unknown") == true)
        #expect(s.send(#"{"op":"openFrom","source":7}"#)["error"]?.string?.contains("'source'") == true)
        s.send(#"{"op":"copy","text":"before"}"#)
        let empty = s.send(#"{"op":"copy","text":"x","as":""}"#)
        #expect(empty["error"]?.string?.contains("'as'") == true)
        #expect(s.send(#"{"op":"paste","as":""}"#)["error"]?.string?.contains("'as'") == true)
        #expect(s.send(#"{"op":"paste"}"#)["text"]?.string == "before", "the refused line changed nothing")
    }

    @Test("notify: posted, generic text, blocked; before ready blocked")
    func notify() {
        let s = Session()
        s.send(Self.start)
        #expect(s.send(#"{"op":"notify","title":"x"}"#)["outcome"]?.string == "blocked")
        s.send(#"{"op":"policy","auth":"authorized"}"#)
        let allowed = s.send(#"{"op":"notify","title":"Q3 from the CFO","body":"down 12%"}"#)
        #expect(allowed["outcome"]?.string == "posted")
        #expect(allowed["body"]?.string == "down 12%")
        s.send(#"{"op":"policy","notifications":"blockOrgData"}"#)
        let generic = s.send(#"{"op":"notify","title":"Q3 from the CFO","body":"down 12%"}"#)
        #expect(generic["outcome"]?.string == "generic")
        #expect(generic["title"]?.string?.contains("CFO") == false)
        #expect(generic["body"] == .null)
        s.send(#"{"op":"policy","notifications":"block"}"#)
        #expect(s.send(#"{"op":"notify","title":"Q3"}"#)["outcome"]?.string == "blocked")
        #expect(s.send(#"{"op":"policy","notifications":"sometimes"}"#)["error"]?.string?.contains("'notifications'") == true)
        #expect(s.send(#"{"op":"notify"}"#)["error"]?.string?.contains("'title'") == true)
    }

    @Test("openFrom: any app by default, whitelist, All AppConnect apps, unknown source; the callback names the source")
    func openFrom() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized"}"#)
        #expect(s.send(#"{"op":"openFrom","source":"org.example.sheets"}"#)["outcome"]?.string == "accepted")
        s.send(#"{"op":"policy","openFrom":"whitelist","openFromWhitelist":["com.acme.viewer"]}"#)
        #expect(s.send(#"{"op":"openFrom","source":"com.acme.viewer"}"#)["outcome"]?.string == "accepted")
        let refused = s.send(#"{"op":"openFrom","source":"com.acme.viewer.evil","document":"a.pdf"}"#)
        #expect(refused["outcome"]?.string == "blocked")
        #expect(refused["notifications"]?.strings == ["openFromAttemptedWhenBlocked"])
        #expect(refused["why"]?.string?.contains("source com.acme.viewer.evil is not in the Open From whitelist") == true)
        #expect(s.send(#"{"op":"openFrom"}"#)["why"]?.string?.contains("source app is unknown") == true)
        s.send(#"{"op":"policy","openFrom":"appConnectApps"}"#)
        #expect(s.send(#"{"op":"openFrom","source":"org.example.sheets"}"#)["outcome"]?.string == "blocked")
        s.send(#"{"op":"device","app":{"id":"org.example.sheets","appConnect":true,"authorized":true}}"#)
        #expect(s.send(#"{"op":"openFrom","source":"org.example.sheets"}"#)["outcome"]?.string == "accepted")
        #expect(s.send(#"{"op":"policy","openFrom":"whitelist"}"#)["error"]?.string?.contains("openFromWhitelist") == true)
        #expect(s.send(#"{"op":"policy","openFrom":"authorized","openFromWhitelist":["a"]}"#)["error"] != nil)
        #expect(s.send(#"{"op":"policy","openFromWhitelist":["a"]}"#)["error"]?.string?.contains("not whitelist") == true)
        s.send(#"{"op":"policy","openFrom":"unauthorized"}"#)
        #expect(s.send(#"{"op":"openFrom","source":"com.acme.viewer"}"#)["outcome"]?.string == "blocked")
    }

    @Test("pasteIn managedApps: another app's clear copy is not pasted into managed content; anyApp pastes it")
    func pasteIn() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"secureCopy","pasteIn":"managedApps"}"#)
        #expect(s.send(#"{"op":"copy","text":"lunch menu","as":"org.example.sheets"}"#)["outcome"]?.string == "written")
        #expect(s.send(#"{"op":"paste"}"#)["text"] == .null)
        #expect(s.send(#"{"op":"paste","as":"org.example.sheets"}"#)["text"]?.string == "lunch menu",
                "other apps are not governed by the library")
        s.send(#"{"op":"copy","text":"plan"}"#)
        #expect(s.send(#"{"op":"paste"}"#)["text"]?.string == "plan", "SecureCopy items of managed apps still paste")
        s.send(#"{"op":"policy","pasteIn":"anyApp"}"#)
        s.send(#"{"op":"copy","text":"lunch menu","as":"org.example.sheets"}"#)
        #expect(s.send(#"{"op":"paste"}"#)["text"]?.string == "lunch menu")
        #expect(s.send(#"{"op":"policy","pasteIn":"everyone"}"#)["error"]?.string?.contains("'pasteIn'") == true)
    }
}

/// The offline timers through the contract: `policy` with `offlineAccessCheckSeconds` and
/// `offlineWipeSeconds`, then `clock`, `checkOffline` and `confirm`.
@Suite("Simulator: offline timers")
struct OfflineTimerSimulatorTests {
    @Test("held back past the access check, restored by a confirmation, wiped past the wipe period; wall-clock jumps do nothing")
    func timers() {
        let s = Session()
        s.send(#"{"op":"start","app":"com.acme.notes"}"#)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"authorized","offlineAccessCheckSeconds":3600,"offlineWipeSeconds":86400}"#)
        s.send(#"{"op":"clock","advanceSeconds":3600,"wallClockSeconds":-86400}"#)
        #expect(s.send(#"{"op":"checkOffline"}"#)["outcome"]?.string == "confirmed")
        s.send(#"{"op":"clock","wallClockSeconds":9999999}"#)
        #expect(s.send(#"{"op":"checkOffline"}"#)["elapsedSeconds"] == .number(3600), "the wall clock does not count")
        s.send(#"{"op":"clock","advanceSeconds":1}"#)
        let due = s.send(#"{"op":"checkOffline"}"#)
        #expect(due["outcome"]?.string == "accessCheckDue")
        #expect(due["notifications"]?.strings == ["authStateChanged"])
        #expect(due["why"]?.string?.contains("transfers are blocked") == true)
        #expect(s.send(#"{"op":"copy","text":"x"}"#)["outcome"]?.string == "blocked")
        #expect(s.send(#"{"op":"confirm"}"#)["notifications"]?.strings == ["authStateChanged"])
        #expect(s.send(#"{"op":"copy","text":"x"}"#)["outcome"]?.string == "written")
        s.send(#"{"op":"clock","advanceSeconds":86401}"#)
        #expect(s.send(#"{"op":"checkOffline"}"#)["outcome"]?.string == "wiped")
        #expect(s.send(#"{"op":"state"}"#)["authState"]?.string == "retired")
        #expect(s.send(#"{"op":"clock"}"#)["error"]?.string?.contains("advanceSeconds") == true)
        #expect(s.send(#"{"op":"policy","offlineWipeSeconds":-5}"#)["error"]?.string?.contains("offlineWipeSeconds") == true)
    }

    @Test("issue 31.1-3: a wipe is terminal for confirm; a policy line restores a held authorization; a copy past the period is blocked")
    func acceptanceFindings() {
        let s = Session()
        s.send(#"{"op":"start","app":"com.acme.notes"}"#)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"authorized","offlineAccessCheckSeconds":3600,"offlineWipeSeconds":86400}"#)
        s.send(#"{"op":"clock","advanceSeconds":3660}"#)
        #expect(s.send(#"{"op":"copy","text":"x"}"#)["outcome"]?.string == "blocked", "61 minutes into a 1-hour period")
        #expect(s.send(#"{"op":"checkOffline"}"#)["outcome"]?.string == "accessCheckDue")
        let push = s.send(#"{"op":"policy","print":"authorized"}"#)
        #expect(push["notifications"]?.strings.contains("authStateChanged") == true)
        #expect(s.send(#"{"op":"state"}"#)["authState"]?.string == "authorized", "every policy line is a confirmation")
        s.send(#"{"op":"clock","advanceSeconds":3601}"#)
        #expect(s.send(#"{"op":"checkOffline"}"#)["outcome"]?.string == "accessCheckDue")
        s.send(#"{"op":"clock","advanceSeconds":86400}"#)
        #expect(s.send(#"{"op":"checkOffline"}"#)["outcome"]?.string == "wiped")
        #expect(s.send(#"{"op":"confirm"}"#)["notifications"]?.strings == [])
        #expect(s.send(#"{"op":"state"}"#)["authState"]?.string == "retired", "a confirmation does not undo a wipe")
        s.send(#"{"op":"policy","auth":"authorized"}"#)
        #expect(s.send(#"{"op":"state"}"#)["authState"]?.string == "authorized", "the server authorizing again does")
    }

    @Test("without the fields nothing is ever held back (as before)")
    func noTimers() {
        let s = Session()
        s.send(#"{"op":"start","app":"com.acme.notes"}"#)
        s.send(#"{"op":"policy","auth":"authorized"}"#)
        s.send(#"{"op":"clock","advanceSeconds":315360000}"#)
        #expect(s.send(#"{"op":"checkOffline"}"#)["outcome"]?.string == "confirmed")
    }
}

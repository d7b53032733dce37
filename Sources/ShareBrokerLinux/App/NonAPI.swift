// Entry points for the package's own benchmark package (Benchmarks/), which cannot see `package`
// declarations: like the core's (Sources/ShareBroker/Support/NonAPI.swift), NOT API. An app that
// imports them with `@_spi(Benchmarks)` gets no stability promise.

import ShareBroker

extension Platform {
    /// Benchmarks only (not API): this platform with `pasteboard` as its general pasteboard, so
    /// a benchmark measures the X11 clipboard behind the in-memory adapters of
    /// `Platform.embedded(custodian:records:)`.
    @_spi(Benchmarks)
    public func using(_ pasteboard: X11Pasteboard) -> Platform {
        var platform = self
        platform.pasteboard = pasteboard
        return platform
    }
}

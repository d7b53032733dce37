// libxcb and its XFixes extension, found through pkg-config (apt: libxcb1-dev libxcb-xfixes0-dev).
// Only Sources/ShareBrokerLinux/X11 (and its tests) import this module.
#ifndef CXCB_SHIM_H
#define CXCB_SHIM_H
#include <xcb/xcb.h>
#include <xcb/xfixes.h>

// The XFixes extension id is a C global variable, which Swift 6 refuses to touch directly
// (global mutable state); libxcb only ever reads it.
static inline xcb_extension_t *cxcb_xfixes_extension(void) { return &xcb_xfixes_id; }
#endif

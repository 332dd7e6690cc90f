// tetherctl: the command line of tetherd (see Commands.swift, docs/tetherctl.md).

import ArgumentParser
import Glibc

// A reader that goes away (tetherctl watch | head -1) makes writes fail
// with EPIPE, which ends tetherctl quietly, instead of killing it.
signal(SIGPIPE, SIG_IGN)

do {
    var command = try Tetherctl.parseAsRoot()
    try command.run()
} catch {
    // ArgumentParser exits with EX_USAGE (64) for usage errors; tetherctl
    // documents 2, as most command lines do, and keeps 64 for nothing.
    if Tetherctl.exitCode(for: error) == .validationFailure {
        let text = Tetherctl.fullMessage(for: error) + "\n"
        _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress!, $0.count - 1) }
        exit(Exit.usage)
    }
    Tetherctl.exit(withError: error)
}

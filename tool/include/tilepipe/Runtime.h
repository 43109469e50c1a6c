// Runtime: tilepipe/runtime.cuh, the header of host and device code that rewritten files with
// tensor or bulk copies call (runtime/include/tilepipe/runtime.cuh, compiled into tilepipe).
#pragma once
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace tilepipe {

/// How a rewritten file gets the runtime: `#include <tilepipe/runtime.cuh>` (the header installed
/// with tilepipe, found through -I), or the header's text pasted into the file, self-contained.
enum class RuntimeMode { Header, Inline };

/// tilepipe's own version ("0.1.0").
llvm::StringRef toolVersion();
/// The runtime's version (TILEPIPE_RUNTIME_VERSION), the one the emitted code is written against.
unsigned runtimeVersion();
/// The header's text, as compiled into this tilepipe.
llvm::StringRef runtimeHeaderText();
/// The header's path under an include folder: "tilepipe/runtime.cuh".
llvm::StringRef runtimeHeaderName();

/// What a rewritten file that calls the runtime gets at its top: the include (Header) or the
/// header's text (Inline), then a static_assert that the version included is runtimeVersion().
std::string runtimeUse(RuntimeMode Mode);

/// The include folder that holds tilepipe/runtime.cuh beside the program at ExePath (installed:
/// <prefix>/include beside <prefix>/bin; in the build tree: <build>/include), checked to be the
/// text this tilepipe writes code for; an error that says what was found otherwise.
llvm::Expected<std::string> findRuntimeDir(llvm::StringRef ExePath);

/// A folder that exists only in tilepipe's own parses, where they find the header (as a system
/// header, searched after the user's folders), so that tilepipe can read files that include it
/// (its own output) without the user's -I.
llvm::StringRef virtualRuntimeDir();
/// The name, in virtualRuntimeDir(), of the declarations the parse adds of what nvcc declares
/// implicitly and Clang's headers lack (Driver.cpp).
llvm::StringRef nvccPreludeName();

} // namespace tilepipe

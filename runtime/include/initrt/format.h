// Sizes for people: one spelling for every message and summary of initc and prog/init.
#pragma once

#include <string>

namespace initrt {

/// `bytes` in binary units, as `initc inspect` and `prog/init` print them: "512 B",
/// "94.53 MiB", "1.48 TiB" (two decimals from KiB up).
std::string formatBytes(double bytes);

} // namespace initrt

// Lists of episode numbers and frame indices as people type them: "1,3,5-9".
// Shared by every command that takes --episodes or --at, and by the Python package.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "reel/status.h"

namespace reel {

// The most indices one list may name: "0-999999999" is a typo, not a request.
inline constexpr int64_t kMaxIndexListSize = 1'000'000;

// Parses comma-separated items, each a non-negative decimal N or an inclusive range
// A-B (A <= B); spaces around items are ignored. Returns the indices in the order
// written, repeats included (frames may be asked for twice; DropRepeats for a set).
// Errors: Invalid naming the item for an empty item, a sign, a non-digit, a number
// over 2^53, a range written backwards or with ':' (the message shows the A-B form),
// or a list naming more than `max_size` indices.
Result<std::vector<int64_t>> ParseIndexList(std::string_view text, int64_t max_size = kMaxIndexListSize);

// The indices in their order, each once (the first occurrence stays).
std::vector<int64_t> DropRepeats(const std::vector<int64_t>& indices);

}  // namespace reel

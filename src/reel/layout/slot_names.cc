// Video slot names as the reference collector makes them (include/reel/layout.h SlotBase),
// and the names of a slot's auxiliary streams (AuxStreamMainStem).
#include <algorithm>
#include <cctype>
#include <string>

#include "reel/layout.h"

namespace reel {

namespace {

// The length of the UTF-8 sequence at s[i] and its code point; 1 and -1 for a byte that
// does not start a well-formed sequence.
size_t DecodeUtf8(std::string_view s, size_t i, int32_t* code) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    *code = -1;
    return 1;
  }
  int32_t c = n == 1 ? lead : lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      *code = -1;
      return 1;
    }
    c = (c << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr int32_t kLeast[5] = {0, 0, 0x80, 0x800, 0x10000};  // overlong forms are not UTF-8
  *code = c < kLeast[n] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) ? -1 : c;
  return n;
}

// slot_base's character class: [0-9A-Za-z_一-鿿].
bool Kept(int32_t c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
         (c >= 0x4E00 && c <= 0x9FFF);
}

}  // namespace

std::string SlotBase(std::string_view name, std::string_view fallback) {
  std::string out;
  bool in_run = false;  // inside a run of other characters (one '_' for the run)
  for (size_t i = 0; i < name.size();) {
    int32_t code = 0;
    const size_t n = DecodeUtf8(name, i, &code);
    if (Kept(code)) {
      out.append(name.substr(i, n));
      in_run = false;
    } else if (!in_run) {
      out.push_back('_');
      in_run = true;
    }
    i += n;
  }
  const size_t first = out.find_first_not_of('_');
  if (first == std::string::npos) return std::string(fallback);
  return out.substr(first, out.find_last_not_of('_') - first + 1);
}

bool IsSlotName(std::string_view slot) { return !slot.empty() && SlotBase(slot, "") == slot; }

AllocatedSlots AllocateSlotNames(std::string_view user_name, std::string_view model_name,
                                 const std::vector<std::string>& occupied_rgb_slots) {
  // realsense_short(): the first "D" and three digits of the model name, else "RealSense".
  std::string model = "realsense";
  for (size_t i = 0; i + 4 <= model_name.size(); ++i)
    if (model_name[i] == 'D' && std::isdigit(static_cast<unsigned char>(model_name[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(model_name[i + 2])) &&
        std::isdigit(static_cast<unsigned char>(model_name[i + 3]))) {
      model = "d" + std::string(model_name.substr(i + 1, 3));
      break;
    }
  const std::string base = SlotBase(user_name, model);
  const int64_t n = std::count_if(occupied_rgb_slots.begin(), occupied_rgb_slots.end(),
                                  [&](const std::string& s) { return s.starts_with(base + "_rgb"); });
  const std::string suffix = n == 0 ? "" : "_" + std::to_string(n + 1);
  const std::string depth = base.ends_with("_depth") ? base : base + "_depth";
  return {base + "_rgb" + suffix, depth + suffix};
}

std::optional<std::string> AuxStreamMainStem(std::string_view file_name) {
  const size_t dot = file_name.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view ext = file_name.substr(dot + 1), stem = file_name.substr(0, dot);
  if (ext != "mp4" && ext != "mkv") return std::nullopt;
  for (size_t at = stem.find("_aux"); at != std::string_view::npos; at = stem.find("_aux", at + 1)) {
    const std::string_view rest = stem.substr(at + 4);
    const bool named = rest.size() > 1 && rest[0] == '_' &&
                       std::all_of(rest.begin() + 1, rest.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (at > 0 && (rest.empty() || named)) return std::string(stem.substr(0, at));
  }
  return std::nullopt;
}

}  // namespace reel

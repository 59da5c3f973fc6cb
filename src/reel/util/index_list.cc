#include "reel/index_list.h"

#include <string>
#include <unordered_set>

namespace reel {
namespace {

constexpr int64_t kMaxIndex = int64_t{1} << 53;  // exact in a double: safe for JSON and Python

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Result<int64_t> ParseIndex(std::string_view digits, std::string_view item) {
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return Status::Invalid("\"" + std::string(item) + "\": expected N or A-B with non-negative whole numbers");
  int64_t value = 0;
  for (char c : digits) {
    value = value * 10 + (c - '0');
    if (value > kMaxIndex) return Status::Invalid("\"" + std::string(item) + "\": number too large");
  }
  return value;
}

// One item: "N" or "A-B" as [first, last].
Result<std::pair<int64_t, int64_t>> ParseItem(std::string_view item) {
  if (item.empty()) return Status::Invalid("empty item (two commas, or a comma at an end)");
  if (const size_t colon = item.find(':'); colon != std::string_view::npos)
    return Status::Invalid("\"" + std::string(item) + "\": ranges are written A-B, both ends included (e.g. " +
                           std::string(Trim(item.substr(0, colon))) + "-" +
                           std::string(Trim(item.substr(colon + 1))) + ")");
  const size_t dash = item.find('-', 1);
  if (item.front() == '-') return Status::Invalid("\"" + std::string(item) + "\": negative numbers are not indices");
  if (dash == std::string_view::npos) {
    REEL_ASSIGN_OR_RETURN(int64_t n, ParseIndex(item, item));
    return std::make_pair(n, n);
  }
  REEL_ASSIGN_OR_RETURN(int64_t first, ParseIndex(Trim(item.substr(0, dash)), item));
  REEL_ASSIGN_OR_RETURN(int64_t last, ParseIndex(Trim(item.substr(dash + 1)), item));
  if (first > last)
    return Status::Invalid("\"" + std::string(item) + "\": range runs backwards (write " + std::to_string(last) +
                           "-" + std::to_string(first) + ")");
  return std::make_pair(first, last);
}

}  // namespace

Result<std::vector<int64_t>> ParseIndexList(std::string_view text, int64_t max_size) {
  std::vector<int64_t> out;
  int64_t named = 0;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item = Trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    REEL_ASSIGN_OR_RETURN(auto range, ParseItem(item));
    named += range.second - range.first + 1;
    if (named > max_size)
      return Status::Invalid("\"" + std::string(text) + "\" names more than " + std::to_string(max_size) +
                             " indices; is a range mistyped?");
    for (int64_t i = range.first; i <= range.second; ++i) out.push_back(i);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<int64_t> DropRepeats(const std::vector<int64_t>& indices) {
  std::vector<int64_t> out;
  std::unordered_set<int64_t> seen;
  for (int64_t i : indices)
    if (seen.insert(i).second) out.push_back(i);
  return out;
}

}  // namespace reel

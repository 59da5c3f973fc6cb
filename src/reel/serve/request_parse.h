// Internal: the import server's parsing of untrusted request pieces (form fields, tus
// headers, base64, cookies, bearer tokens, project names, raw header blocks). Plain
// functions over bytes: no I/O, no allocation beyond their results, never throw, so a
// fuzzer can call them directly (fuzz/fuzz_serve_request.cc).
//
// Thread safety: all functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace reel::serve {

// A refusal: the stable rule id (docs/serve.md) and what was found.
struct FieldError {
  std::string rule;
  std::string detail;
};

// A decimal number made of ASCII digits only (no sign, no spaces), at most 19 digits so
// it fits in uint64_t. False otherwise; `out` untouched then.
bool ParseUint(std::string_view text, uint64_t* out);

// Standard base64 (RFC 4648 §4, the alphabet with '+' and '/'), padded to a multiple of
// four with at most two '='. False on any other byte or shape; `out` untouched then.
bool Base64Decode(std::string_view in, std::string* out);

// tus Upload-Metadata: comma-separated "key base64" pairs (a key alone means an empty
// value). Keys are 1..64 bytes of visible ASCII other than ','. Errors: tus.metadata
// (bad shape, bad base64, a key twice), form.field_size (a value longer than
// `max_field_bytes`). At most 16 pairs (form.parts).
std::optional<FieldError> ParseTusMetadata(std::string_view header, size_t max_field_bytes,
                                           std::map<std::string, std::string>* out);

// The form/metadata fields of an upload, validated.
struct UploadFields {
  std::string name;                 // the task name
  std::string project;              // project_id when given, else name
  int64_t form_episode_index = -1;  // (N-1) % 1000 as sent
};

// The task directory an upload goes to: `project_id` when given and non-empty, else `name`.
std::string ProjectOf(const std::map<std::string, std::string>& fields);

// Checks the fields of an upload (multipart form or tus metadata): `name` present,
// the project a valid name (ProjectNameProblem), `episode_index` present and a
// non-negative integer that fits in int64 (contract §9: the reference client, `reel
// upload` and the tus metadata of both always send it).
// Errors: form.name, form.episode_index.
std::optional<FieldError> CheckUploadFields(const std::map<std::string, std::string>& fields,
                                            UploadFields* out);

// Why `name` cannot be a task directory, or "" when it can. A name is 1..255 bytes of
// valid UTF-8; not ".", "..", nor starting with '.'; no '/', '\\'; no control, format
// (bidi controls, zero-width characters), private-use, unassigned, default-ignorable
// or noncharacter code point; no white space at either end; and already in Unicode
// NFC (checked with the NFC quick-check property: a name the check cannot prove NFC is
// refused, never rewritten, so the client's name and the directory's stay the same).
std::string ProjectNameProblem(std::string_view name);

// The value of cookie `name` in a Cookie header ("a=1; b=2"), or "" when absent.
std::string CookieValue(std::string_view header, std::string_view name);

// The token of "Bearer <token>" (scheme case-insensitive, one space): 1..4096 bytes of
// visible ASCII (0x21..0x7e). nullopt for another scheme, an empty token, or any other
// byte (NUL, control characters, spaces, non-ASCII): such a token is never compared.
std::optional<std::string> BearerToken(std::string_view authorization);

// The raw values of header `name` (case-insensitive) in a raw request head ("METHOD
// path HTTP/1.1\r\nName: value\r\n...\r\n\r\n"), exactly as sent: no %-decoding, no cut
// at NUL; leading and trailing spaces and tabs trimmed. One entry per occurrence.
std::vector<std::string> RawHeaderValues(std::string_view head, std::string_view name);

// True when a Content-Encoding header value asks for no decoding: absent (empty) or
// "identity" (case-insensitive, surrounding spaces allowed).
bool IsIdentityEncoding(std::string_view value);

}  // namespace reel::serve

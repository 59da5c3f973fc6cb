// Shared by the binding files that run a library call with the GIL released.
#pragma once

#include <type_traits>
#include <utility>

#include "binding.h"

namespace reel::py {

// Runs `fn` (returning Result<T>) with the GIL released; raises its error.
template <typename Fn>
auto Released(Fn fn) -> std::remove_cvref_t<decltype(fn().value())> {
  decltype(fn()) r = NotRunYet();
  {
    nb::gil_scoped_release release;
    r = fn();
  }
  return Unwrap(std::move(r));
}

}  // namespace reel::py

// errors.hpp: the error every reader throws for bad input.
#pragma once

#include <stdexcept>

namespace attnscope::core {

// Bad input at the boundary (a file, a flag, a config); what() is one line
// naming the problem and, where there is one, what to do.
class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace attnscope::core

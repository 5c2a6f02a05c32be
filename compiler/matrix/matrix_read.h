// The matrix file reader behind matrix_from_file (matrix/matrix.h), on a
// stream: for callers that hold the text already, and for the fuzz harness.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "field/field.h"
#include "matrix/matrix.h"

namespace collplan {

// Matrix Market when the first character is '%', else CSV (the formats of
// matrix/matrix.h); checks that it is rows×cols with entries in the field.
// UserError naming `path`, the line and the value otherwise.
Matrix read_matrix(std::istream& in, const std::string& path, uint32_t rows, uint32_t cols, const Field& f);

}  // namespace collplan

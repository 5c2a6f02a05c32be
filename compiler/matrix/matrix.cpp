#include "matrix/matrix.h"
#include "matrix/matrix_read.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>

#include <xxhash.h>

#include "matrix/structured.h"
#include "support/error.h"
#include "support/limits.h"
#include "support/safe_file.h"

namespace collplan {

Elem SplitMix64::uniform(const Field& f) { return UniformDraw(f)(*this); }

Elem SplitMix64::nonzero(const Field& f) {
  for (;;) {
    Elem e = uniform(f);
    if (e != 0) return e;
  }
}

// A dft / draw-loose family (or its inverse) stores its points; they must
// have the structure the family names for some radix P (matrix/structured.h).
static void check_structured_points(const MatrixSpec& ms, const Field& f) {
  const bool dft = ms.family == "dft" || ms.family == "inverse-dft";
  for (const VandermondeStructure& s : detect_all(f, ms.points, false))
    if (!dft || s.shape.M == 1) return;
  const uint32_t K = static_cast<uint32_t>(ms.points.size());
  if (dft && (f.size() - 1) % K != 0) user_error("{} matrix needs K | q-1: K = {}, q-1 = {}", ms.family, K, f.size() - 1);
  // Name the failing condition for the smallest radix that could apply.
  const uint64_t g = std::gcd<uint64_t>(K, f.size() - 1);
  for (uint64_t P = 2; P <= g; ++P)
    if (g % P == 0) {
      std::string why;
      detect_structure(f, ms.points, static_cast<uint32_t>(P), false, &why);
      user_error("{} matrix: the points are not {} for any radix P (radix {}: {})", ms.family,
                 dft ? "beta^rev(k) with K = P^H" : "alpha_i*beta^rev(j)", P, why.empty() ? "M > 1" : why);
    }
  user_error("{} matrix needs a radix P >= 2 dividing gcd(K, q-1) = gcd({}, {}) = {}", ms.family, K, f.size() - 1, g);
}

Matrix materialize(const MatrixSpec& ms, const Field& f) {
  const uint32_t r = ms.rows, c = ms.cols;
  if (r == 0 || c == 0) user_error("matrix is {}x{}: both dimensions must be positive", r, c);
  Matrix m = Matrix::zeros(r, c);
  if (ms.family == "random") {
    SplitMix64 rng(ms.seed);
    for (auto& e : m.a) e = rng.uniform(f);
  } else if (ms.family == "identity") {
    if (r != c) user_error("identity matrix must be square, got {}x{}", r, c);
    for (uint32_t i = 0; i < r; ++i) m.at(i, i) = 1;
  } else if (ms.family == "permutation") {
    if (r != c || ms.perm.size() != c)
      user_error("permutation matrix needs {} entries in perm, got {}", c, ms.perm.size());
    std::vector<bool> seen(c, false);
    for (uint32_t k = 0; k < c; ++k) {
      uint32_t v = ms.perm[k];
      if (v >= c) user_error("perm[{}] = {} is out of range (valid: 0..{})", k, v, c - 1);
      if (seen[v]) user_error("perm[{}] = {} repeats an earlier entry: a permutation must be a bijection", k, v);
      seen[v] = true;
      m.at(v, k) = 1;
    }
  } else if (ms.family == "vandermonde") {
    if (ms.points.size() != c)
      user_error("vandermonde matrix with {} columns needs {} points, got {}", c, c, ms.points.size());
    for (uint32_t j = 0; j < c; ++j) {
      f.check(ms.points[j], fmt::format("vandermonde point {}", j).c_str());
      for (uint32_t j2 = 0; j2 < j; ++j2)
        if (ms.points[j2] == ms.points[j])
          user_error("vandermonde points {} and {} are both {}: points must be distinct", j2, j, ms.points[j]);
    }
    for (uint32_t j = 0; j < c; ++j) {
      Elem v = 1;
      for (uint32_t i = 0; i < r; ++i) {
        m.at(i, j) = v;
        v = f.mul(v, ms.points[j]);
      }
    }
  } else if (ms.family == "dft" || ms.family == "draw-loose" || ms.family == "inverse-dft" ||
             ms.family == "inverse-draw-loose") {
    if (r != c) user_error("{} matrix must be square, got {}x{}", ms.family, r, c);
    if (ms.points.size() != c)
      user_error("{} matrix with {} columns needs {} points, got {}", ms.family, c, c, ms.points.size());
    check_structured_points(ms, f);
    m = ms.family.rfind("inverse-", 0) == 0 ? vandermonde_inverse(f, ms.points) : vandermonde_matrix(f, ms.points);
  } else if (ms.family == "lagrange" || ms.family == "cauchy" || ms.family == "rs-systematic") {
    if (r != c) user_error("{} matrix must be square, got {}x{}", ms.family, r, c);
    const size_t lists = ms.family == "lagrange" ? 2 : 4;
    if (ms.points.size() != lists * c)
      user_error("{} matrix with K = {} needs {} parameters ({}), got {}", ms.family, c, lists * c,
                 ms.family == "lagrange" ? "omega then alpha, K each"
                 : ms.family == "cauchy" ? "x, y, c, d, K each"
                                         : "x, y, v, v', K each",
                 ms.points.size());
    auto part = [&](size_t i) {
      return std::vector<Elem>(ms.points.begin() + static_cast<ptrdiff_t>(i * c),
                               ms.points.begin() + static_cast<ptrdiff_t>((i + 1) * c));
    };
    if (ms.family == "lagrange") m = lagrange_matrix(f, part(0), part(1));
    else if (ms.family == "cauchy") m = cauchy_matrix(f, part(0), part(1), part(2), part(3));
    else m = rs_systematic(2 * c, c, f, part(0), part(1), part(2), part(3)).A;
  } else if (ms.family == "explicit") {
    if (ms.entries.size() != static_cast<size_t>(r) * c)
      user_error("explicit matrix {}x{} needs {} entries, got {}", r, c, static_cast<size_t>(r) * c, ms.entries.size());
    for (size_t i = 0; i < ms.entries.size(); ++i)
      if (!f.valid(ms.entries[i])) f.check(ms.entries[i], fmt::format("matrix entry ({}, {})", i / c, i % c).c_str());
    m.a = ms.entries;
  } else {
    user_error("unknown matrix family '{}' (valid: random, vandermonde, identity, permutation, explicit, dft, "
               "draw-loose, inverse-dft, inverse-draw-loose, lagrange, cauchy, rs-systematic)",
               ms.family);
  }
  return m;
}

Digest matrix_digest(const Matrix& m, const Field& f) {
  const uint32_t w = f.elem_bytes();
  // Streamed through a small buffer (the same hash as over the whole byte
  // string): a K×K matrix is hashed without a second copy of its entries.
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> st(XXH3_createState(), &XXH3_freeState);
  COLLPLAN_ASSERT(st && XXH3_128bits_reset(st.get()) == XXH_OK, "matrix_digest: XXH3 state");
  std::vector<uint8_t> buf;
  buf.reserve(1 << 16);
  auto put = [&](uint32_t v, uint32_t bytes) {
    for (uint32_t b = 0; b < bytes; ++b) buf.push_back(static_cast<uint8_t>(v >> (8 * b)));
  };
  auto drain = [&] {
    XXH3_128bits_update(st.get(), buf.data(), buf.size());
    buf.clear();
  };
  put(m.rows, 4);
  put(m.cols, 4);
  put(w, 4);
  for (Elem e : m.a) {
    put(e, w);
    if (buf.size() + 4 > buf.capacity()) drain();
  }
  drain();
  XXH128_hash_t h = XXH3_128bits_digest(st.get());
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, h);
  Digest d;
  std::copy(std::begin(canon.digest), std::end(canon.digest), d.bytes.begin());
  return d;
}

static MatrixSpec finish(MatrixSpec ms, const Field& f) {
  ms.digest = matrix_digest(materialize(ms, f), f);
  return ms;
}

MatrixSpec matrix_random(uint32_t n, uint64_t seed, const Field& f) {
  MatrixSpec ms;
  ms.family = "random";
  ms.rows = ms.cols = n;
  ms.seed = seed;
  return finish(std::move(ms), f);
}

MatrixSpec matrix_identity(uint32_t n, const Field& f) {
  MatrixSpec ms;
  ms.family = "identity";
  ms.rows = ms.cols = n;
  return finish(std::move(ms), f);
}

MatrixSpec matrix_permutation(std::vector<uint32_t> perm, const Field& f) {
  MatrixSpec ms;
  ms.family = "permutation";
  ms.rows = ms.cols = static_cast<uint32_t>(perm.size());
  ms.perm = std::move(perm);
  return finish(std::move(ms), f);
}

MatrixSpec matrix_vandermonde(std::vector<Elem> points, const Field& f) {
  MatrixSpec ms;
  ms.family = "vandermonde";
  ms.rows = ms.cols = static_cast<uint32_t>(points.size());
  ms.points = std::move(points);
  return finish(std::move(ms), f);
}

MatrixSpec matrix_with_points(std::string family, uint32_t K, std::vector<Elem> points, const Field& f) {
  MatrixSpec ms;
  ms.family = std::move(family);
  ms.rows = ms.cols = K;
  ms.points = std::move(points);
  return finish(std::move(ms), f);
}

MatrixSpec matrix_dft(uint32_t K, uint32_t P, const Field& f, bool inverse) {
  return matrix_with_points(inverse ? "inverse-dft" : "dft", K, dft_points(f, K, P), f);
}

MatrixSpec matrix_draw_loose(uint32_t K, uint32_t P, const std::vector<uint64_t>& phi, const Field& f, bool inverse) {
  return matrix_with_points(inverse ? "inverse-draw-loose" : "draw-loose", K, draw_loose_points(f, K, P, phi), f);
}

MatrixSpec matrix_lagrange(const std::vector<Elem>& omega, const std::vector<Elem>& alpha, const Field& f) {
  std::vector<Elem> pts = omega;
  pts.insert(pts.end(), alpha.begin(), alpha.end());
  return matrix_with_points("lagrange", static_cast<uint32_t>(omega.size()), std::move(pts), f);
}

MatrixSpec matrix_four_lists(std::string family, const std::vector<std::vector<Elem>>& lists, const Field& f) {
  COLLPLAN_ASSERT(lists.size() == 4, "matrix_four_lists: four parameter lists");
  std::vector<Elem> pts;
  for (const auto& l : lists) pts.insert(pts.end(), l.begin(), l.end());
  return matrix_with_points(std::move(family), static_cast<uint32_t>(lists[0].size()), std::move(pts), f);
}

MatrixSpec matrix_explicit(Matrix m, const Field& f, std::string source) {
  MatrixSpec ms;
  ms.family = "explicit";
  ms.rows = m.rows;
  ms.cols = m.cols;
  ms.entries = std::move(m.a);
  ms.source = std::move(source);
  return finish(std::move(ms), f);
}

namespace {

uint64_t parse_uint(const std::string& tok, const std::string& path, size_t line) {
  if (tok.empty() || tok.size() > 19 || !std::all_of(tok.begin(), tok.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
    user_error("{}:{}: '{}' is not a non-negative integer", path, line, tok);
  return std::stoull(tok);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

Matrix read_matrix_market(std::istream& in, const std::string& path, uint32_t rows, uint32_t cols, const Field& f) {
  std::string line;
  std::getline(in, line);
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  std::istringstream hs(lower);
  std::string banner, object, format, type, sym;
  hs >> banner >> object >> format >> type >> sym;
  if (object != "matrix" || (format != "array" && format != "coordinate"))
    user_error("{}:1: unsupported Matrix Market header '{}' (valid: '%%MatrixMarket matrix array|coordinate integer general')", path, trim(line));
  if (type != "integer" && type != "pattern")
    user_error("{}:1: Matrix Market field '{}' is not supported: entries must be integers (field elements)", path, type);
  if (sym != "general")
    user_error("{}:1: Matrix Market symmetry '{}' is not supported (valid: general)", path, sym);
  size_t lineno = 1;
  auto next_data_line = [&](std::string& out) {
    while (std::getline(in, out)) {
      ++lineno;
      out = trim(out);
      if (!out.empty() && out[0] != '%') return true;
    }
    return false;
  };
  if (!next_data_line(line)) user_error("{}: missing Matrix Market size line", path);
  std::istringstream ss(line);
  std::vector<std::string> toks;
  for (std::string t; ss >> t;) toks.push_back(t);
  const bool coord = format == "coordinate";
  if (toks.size() != (coord ? 3u : 2u))
    user_error("{}:{}: size line '{}' should have {} numbers", path, lineno, line, coord ? 3 : 2);
  uint64_t r = parse_uint(toks[0], path, lineno), c = parse_uint(toks[1], path, lineno);
  if (r != rows || c != cols)
    user_error("{}:{}: matrix is {}x{} but the spec needs {}x{}", path, lineno, r, c, rows, cols);
  Matrix m = Matrix::zeros(rows, cols);
  if (coord) {
    uint64_t nnz = parse_uint(toks[2], path, lineno);
    std::vector<uint32_t> seen(static_cast<size_t>(rows) * cols, 0);  // the line of each coordinate given (a file of
                                                                         // <= 1 GiB has < 2^32 lines)
    for (uint64_t e = 0; e < nnz; ++e) {
      if (!next_data_line(line)) user_error("{}: expected {} entries, file ends after {}", path, nnz, e);
      std::istringstream es(line);
      std::vector<std::string> et;
      for (std::string t; es >> t;) et.push_back(t);
      const size_t want = type == "pattern" ? 2 : 3;
      if (et.size() != want) user_error("{}:{}: entry line '{}' should have {} numbers", path, lineno, line, want);
      uint64_t i = parse_uint(et[0], path, lineno), j = parse_uint(et[1], path, lineno);
      if (i < 1 || i > rows || j < 1 || j > cols)
        user_error("{}:{}: coordinate ({}, {}) is outside the {}x{} matrix (1-based)", path, lineno, i, j, rows, cols);
      uint64_t v = type == "pattern" ? 1 : parse_uint(et[2], path, lineno);
      if (!f.valid(v)) user_error("{}:{}: entry {} is not an element of {} (valid: 0..{})", path, lineno, v, f.name(), f.size() - 1);
      // Matrix Market sums repeated coordinates of a sparse matrix; over a
      // field that is rarely what a generator file means, so it is refused.
      const size_t at = static_cast<size_t>(i - 1) * cols + (j - 1);
      if (seen[at])
        user_error("{}:{}: coordinate ({}, {}) is given twice (first on line {}); each entry may appear once", path,
                   lineno, i, j, seen[at]);
      seen[at] = static_cast<uint32_t>(lineno);
      m.at(static_cast<uint32_t>(i - 1), static_cast<uint32_t>(j - 1)) = static_cast<Elem>(v);
    }
  } else {
    // Array format is column-major.
    for (uint32_t j = 0; j < cols; ++j)
      for (uint32_t i = 0; i < rows; ++i) {
        if (!next_data_line(line))
          user_error("{}: expected {} entries, file ends early", path, static_cast<uint64_t>(rows) * cols);
        uint64_t v = parse_uint(line, path, lineno);
        if (!f.valid(v)) user_error("{}:{}: entry {} is not an element of {} (valid: 0..{})", path, lineno, v, f.name(), f.size() - 1);
        m.at(i, j) = static_cast<Elem>(v);
      }
  }
  if (next_data_line(line)) user_error("{}:{}: unexpected extra data '{}'", path, lineno, line);
  return m;
}

Matrix read_csv(std::istream& in, const std::string& path, uint32_t rows, uint32_t cols, const Field& f) {
  Matrix m = Matrix::zeros(rows, cols);
  std::string line;
  size_t lineno = 0;
  uint32_t r = 0;
  while (std::getline(in, line)) {
    ++lineno;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (r >= rows) user_error("{}:{}: more than {} rows (the spec needs a {}x{} matrix)", path, lineno, rows, rows, cols);
    std::istringstream ls(line);
    std::string tok;
    uint32_t c = 0;
    while (std::getline(ls, tok, ',')) {
      tok = trim(tok);
      if (c >= cols) user_error("{}:{}: row has more than {} columns", path, lineno, cols);
      uint64_t v = parse_uint(tok, path, lineno);
      if (!f.valid(v)) user_error("{}:{}: entry {} is not an element of {} (valid: 0..{})", path, lineno, v, f.name(), f.size() - 1);
      m.at(r, c++) = static_cast<Elem>(v);
    }
    if (c != cols) user_error("{}:{}: row has {} columns, the spec needs {}", path, lineno, c, cols);
    ++r;
  }
  if (r != rows) user_error("{}: has {} rows, the spec needs {}", path, r, rows);
  return m;
}

}  // namespace

Matrix read_matrix(std::istream& in, const std::string& path, uint32_t rows, uint32_t cols, const Field& f) {
  return in.peek() == '%' ? read_matrix_market(in, path, rows, cols, f) : read_csv(in, path, rows, cols, f);
}

MatrixSpec matrix_from_file(const std::string& path, uint32_t rows, uint32_t cols, const Field& f) {
  std::istringstream in(files::read_regular_file(path, "matrix file", kMaxMatrixFileBytes));
  // The plan is bound to the entries, never to where they were read from:
  // A.csv, ./A.csv, an absolute path or a copy in another folder give the
  // same bytes and the same plan digest (no path, no base name, in source).
  return matrix_explicit(read_matrix(in, path, rows, cols, f), f);
}

std::vector<Elem> mul_batch(const Field& f, const Matrix& m, const std::vector<Elem>& xs, uint32_t batch) {
  COLLPLAN_ASSERT(xs.size() == static_cast<size_t>(batch) * m.rows, "mul_batch: input size");
  std::vector<Elem> ys(static_cast<size_t>(batch) * m.cols, 0);
  // Row by row, every vector of the batch while the row is in cache: the
  // matrix (1 GiB for an encode of K = 16384) is read once, not `batch` times.
  // The binary fields multiply through their log/antilog tables inline.
  const uint32_t* lg = f.log_table();
  const uint32_t* ex = f.exp_table();
  for (uint32_t i = 0; i < m.rows; ++i) {
    const Elem* row = &m.a[static_cast<size_t>(i) * m.cols];
    for (uint32_t b = 0; b < batch; ++b) {
      const Elem x = xs[static_cast<size_t>(b) * m.rows + i];
      if (x == 0) continue;
      Elem* y = &ys[static_cast<size_t>(b) * m.cols];
      if (lg) {
        const uint32_t lx = lg[x];
        for (uint32_t j = 0; j < m.cols; ++j)
          if (row[j]) y[j] ^= ex[lx + lg[row[j]]];
      } else {
        for (uint32_t j = 0; j < m.cols; ++j)
          if (row[j]) y[j] = f.add(y[j], f.mul(x, row[j]));
      }
    }
  }
  return ys;
}

}  // namespace collplan

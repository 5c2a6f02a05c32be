# collplan_add_plan() and collplan_add_plan_libraries(): compile a collplan
# plan at build time and use its generated C++. Part of the collplan CMake
# package (find_package(collplan)); the collplan build tree uses them too
# (plans/).
#
#   collplan_add_plan(<target>
#       OP <op> K <K> [N <N>] [P <p>] [LAMBDA <lambda>] [FIELD <field>]
#       [MATRIX <family>] [SEED <seed>] [POINTS <p0> <p1> ...] [PERM <q0> <q1> ...]
#       [MATRIX_FILE <file>] [RADIX <P>] [PHI <f0> <f1> ...]
#       [CODE <code>] [GENERATOR <file>] [SYSTEMATIC <bool>]
#       [ROOT <root>] [BLOCKS <n>|auto] [COUNTS <c0> <c1> ...] [EXCLUSIVE]
#       [LOST <r0> <r1> ...] [HELPERS <h0> <h1> ...] [TO <t0> <t1> ...]
#       [ALGORITHM <name>] [PASSES <pass>...|none] [BETA <beta>] [TAU <tau>] [COST_LEN <len>]
#       [NAME <identifier>] [RANK <r>]
#       [CPP] [BINARY] [TEXT])
#
# At build time it runs `collplan compile` on the spec (the options mean what
# the CLI flags of the same names mean — MATRIX_FILE is --matrix-file,
# GENERATOR --generator, COST_LEN --cost-len; see `collplan compile --help`
# and docs/spec-files.md), then `collplan check` on the plan, then, with CPP,
# `collplan emit-cpp` (all ranks, or RANK alone). With neither CPP nor BINARY
# it acts as BINARY. Every option of `compile` that shapes the plan is here:
# the spec, ALGORITHM (default auto), PASSES (default drop-zeros alloc-slots;
# none for no pass) and the cost model BETA, TAU, COST_LEN that auto choices
# and BLOCKS auto use. Lists (POINTS, PERM, PHI, COUNTS, LOST, HELPERS, TO,
# PASSES) are CMake
# lists; an item may also be comma-separated ("1,2,3"). An unknown keyword
# or a malformed value fails configuration naming it; an option the
# operation or matrix does not use (ROOT for an allgather, SEED for an
# identity matrix, ...) fails the build's `collplan compile` naming it.
# decentralized-encode, repair and decode need N (their rank count) and a
# code: CODE (rs, lagrange, lrc:L, random with SEED) or GENERATOR (the code's
# matrix from a file: A, K x (N-K), or G, K x N with SYSTEMATIC OFF); repair
# needs LOST (docs/repair.md).
# Relative MATRIX_FILE and GENERATOR paths are relative to the calling
# CMakeLists.txt; the plan holds the file's entries, not its path, so the
# same call gives the same plan (and digest) in every build folder.
#   BINARY  the .cplan becomes a (non-compiled) source of <target>, so the
#           target is rebuilt after it;
#   CPP     the generated <name>_rank<r>.cpp become sources of <target>, the
#           directory with <name>.h goes on its include path, and it links
#           collplan::embedded (collplan_embedded.h, C++17);
#   TEXT    also writes the text dump <name>.txt (`collplan show`).
# Outputs go to ${CMAKE_CURRENT_BINARY_DIR}/collplan/<name>/; NAME defaults
# to <target>_plan (it is the C++ namespace too). Sets in the caller's scope:
#   <name>_PLAN_FILE   the .cplan
#   <name>_TEXT_FILE   the text dump (with TEXT)
#   <name>_SOURCE_DIR  the directory of the generated files
#
#   collplan_add_plan_libraries(<name>
#       OP <op> K <K> [N <N>] ... [ALGORITHM <algorithm>]   (the spec options above)
#       [RANKS <r|a-b>... | RANKS ALL] [STATIC | OBJECT] [BINARY] [TEXT])
#
# One plan, one library per rank: the plan is compiled and checked once and
# `collplan emit-cpp --ranks` writes the chosen ranks (RANKS: ranks and
# ranges a-b, separate arguments or comma-separated, in 0..K-1 — 0..N-1 for
# decentralized-encode —, each at most once; ALL or no RANKS: every rank).
# <name> is the C++ namespace, the file prefix and the target prefix, so it
# must be a C identifier. It creates:
#   <name>            INTERFACE library: the include directory with <name>.h
#                     (the dispatch header of the chosen ranks, kDigest, ...)
#                     and collplan::embedded;
#   <name>_rank<r>    for every chosen rank r, a STATIC (default) or OBJECT
#                     library compiling <name>_rank<r>.cpp (the entry point
#                     <name>::rank_<r>()), linking <name> publicly;
#   <name>_generate   the custom target that runs the generation, which
#                     every target above depends on.
#   BINARY  also writes rank r's own plan file <name>_rank<r>.cplan
#           (`collplan extract`: that rank alone, the plan's digest), a
#           (non-compiled) source of <name>_rank<r>;
#   TEXT    also writes the text dump <name>.txt.
# Outputs go to ${CMAKE_CURRENT_BINARY_DIR}/collplan/<name>/. Sets in the
# caller's scope <name>_PLAN_FILE, <name>_TEXT_FILE (with TEXT),
# <name>_SOURCE_DIR and <name>_RANKS (the chosen ranks, ascending).
# <name>::run_rank() in the header dispatches over every chosen rank, so a
# program calling it links all their libraries; a program linking one rank's
# library calls <name>::rank_<r>() directly.
#
# Rebuilding (both functions): the spec and options are written to
# <name>.spec.json and <name>.options at configure time, only when they
# change; the generation depends on them, on the collplan executable and on
# MATRIX_FILE, so editing the call (or the matrix file) regenerates the plan
# and recompiles what uses it, and nothing else does.

# Where the helper scripts are, whoever calls the function later.
set_property(GLOBAL PROPERTY COLLPLAN_FUNCTIONS_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(_collplan_write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()

# The keywords of the spec options both functions take, set in the caller's
# scope: _collplan_spec_flags (options), _collplan_spec_values (one value) and
# _collplan_spec_lists (CMake lists; each item may also be comma-separated).
# Every `collplan compile` option that shapes the plan is one of them.
macro(_collplan_spec_keywords)
  set(_collplan_spec_flags EXCLUSIVE)
  set(_collplan_spec_values
    OP K N P LAMBDA FIELD MATRIX CODE SEED MATRIX_FILE GENERATOR SYSTEMATIC RADIX ROOT BLOCKS
    ALGORITHM BETA TAU COST_LEN)
  set(_collplan_spec_lists POINTS PERM PHI COUNTS LOST HELPERS TO PASSES)
endmacro()

# Fails configuration naming the call, the keyword, the value and what would
# be valid.
function(_collplan_bad ctx keyword value valid)
  message(FATAL_ERROR "${ctx}: ${keyword} '${value}' is invalid (valid: ${valid})")
endfunction()

# Checks the arguments parsed with prefix <prefix>: unknown keywords,
# keywords without a value, and each value's form (the CLI checks the rest
# at build time, e.g. K against N or a root against K).
function(_collplan_check_args ctx prefix valid_keywords)
  if(${prefix}_UNPARSED_ARGUMENTS)
    list(JOIN ${prefix}_UNPARSED_ARGUMENTS " " unknown)
    list(JOIN valid_keywords " " valid)
    message(FATAL_ERROR "${ctx}: unknown arguments: ${unknown} (valid keywords: ${valid})")
  endif()
  if(${prefix}_KEYWORDS_MISSING_VALUES)
    list(JOIN ${prefix}_KEYWORDS_MISSING_VALUES ", " missing)
    message(FATAL_ERROR "${ctx}: no value after ${missing}")
  endif()
  foreach(req OP K)
    if(NOT DEFINED ${prefix}_${req})
      message(FATAL_ERROR "${ctx}: ${req} is required")
    endif()
  endforeach()
  set(ops encode decentralized-encode broadcast reduce allgather allgatherv allreduce prefix reduce-scatter repair
    decode)
  if(NOT ${prefix}_OP IN_LIST ops)
    list(JOIN ops ", " v)
    _collplan_bad("${ctx}" OP "${${prefix}_OP}" "${v}")
  endif()
  foreach(kw K N P LAMBDA SEED RADIX ROOT COST_LEN)
    if(DEFINED ${prefix}_${kw} AND NOT ${prefix}_${kw} MATCHES "^[0-9]+$")
      _collplan_bad("${ctx}" ${kw} "${${prefix}_${kw}}" "a non-negative decimal integer")
    endif()
  endforeach()
  if(DEFINED ${prefix}_BLOCKS AND NOT ${prefix}_BLOCKS MATCHES "^([0-9]+|auto)$")
    _collplan_bad("${ctx}" BLOCKS "${${prefix}_BLOCKS}" "a block count n >= 1, or auto")
  endif()
  foreach(kw BETA TAU)
    if(DEFINED ${prefix}_${kw} AND NOT ${prefix}_${kw} MATCHES "^([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$")
      _collplan_bad("${ctx}" ${kw} "${${prefix}_${kw}}" "a number >= 0")
    endif()
  endforeach()
  if(DEFINED ${prefix}_FIELD AND NOT ${prefix}_FIELD MATCHES "^(gf256|gf65536|prime:[0-9]+)$")
    _collplan_bad("${ctx}" FIELD "${${prefix}_FIELD}" "gf256, gf65536, prime:Q")
  endif()
  set(families random vandermonde identity permutation file dft inverse-dft draw-loose inverse-draw-loose
    lagrange cauchy rs-systematic)
  if(DEFINED ${prefix}_MATRIX AND NOT ${prefix}_MATRIX IN_LIST families)
    list(JOIN families ", " v)
    _collplan_bad("${ctx}" MATRIX "${${prefix}_MATRIX}" "${v}")
  endif()
  if(DEFINED ${prefix}_CODE AND NOT ${prefix}_CODE MATCHES "^(rs|lagrange|random|lrc:[0-9]+)$")
    _collplan_bad("${ctx}" CODE "${${prefix}_CODE}" "rs, lagrange, lrc:L, random; or GENERATOR <file>")
  endif()
  if(DEFINED ${prefix}_SYSTEMATIC)
    string(TOUPPER "${${prefix}_SYSTEMATIC}" b)
    if(NOT b MATCHES "^(ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
      _collplan_bad("${ctx}" SYSTEMATIC "${${prefix}_SYSTEMATIC}" "a boolean: ON or OFF")
    endif()
  endif()
  if(DEFINED ${prefix}_ALGORITHM AND NOT ${prefix}_ALGORITHM MATCHES "^[a-z0-9-]+$")
    _collplan_bad("${ctx}" ALGORITHM "${${prefix}_ALGORITHM}" "auto or a generator name, see `collplan list`")
  endif()
  foreach(kw POINTS PERM PHI COUNTS LOST HELPERS TO)
    foreach(item IN LISTS ${prefix}_${kw})
      string(REPLACE "," ";" parts "${item}")
      foreach(x IN LISTS parts)
        if(NOT x MATCHES "^[0-9]+$")
          _collplan_bad("${ctx}" ${kw} "${x}" "non-negative integers, as a CMake list or comma-separated")
        endif()
      endforeach()
    endforeach()
  endforeach()
  foreach(item IN LISTS ${prefix}_PASSES)
    string(REPLACE "," ";" parts "${item}")
    foreach(x IN LISTS parts)
      if(NOT x MATCHES "^[a-z0-9-]+$")
        _collplan_bad("${ctx}" PASSES "${x}" "pass names (see `collplan list`), or none")
      endif()
    endforeach()
  endforeach()
endfunction()

# A JSON string literal of <value>.
function(_collplan_json_string out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()

# From the spec options parsed with prefix <prefix> (checked by
# _collplan_check_args), writes <dir>/<name>.spec.json (the spec file
# `collplan compile --spec` reads, docs/spec-files.md) when it changed, and
# sets <out_spec> to its path and <out_deps> to the files the plan depends on
# besides it (MATRIX_FILE, GENERATOR) in the caller's scope. File paths are
# made absolute (relative ones are relative to the calling CMakeLists.txt);
# the plan holds the files' entries, not their paths, so the same call gives
# the same plan in any build folder.
function(_collplan_write_spec prefix dir name out_spec out_deps)
  set(json "{\n  \"op\": \"${${prefix}_OP}\",\n  \"K\": ${${prefix}_K}")
  foreach(pair "N;N" "P;p" "LAMBDA;lambda" "SEED;seed" "RADIX;radix" "ROOT;root" "COST_LEN;cost_len" "BETA;beta"
               "TAU;tau")
    list(GET pair 0 opt)
    list(GET pair 1 key)
    if(DEFINED ${prefix}_${opt})
      string(APPEND json ",\n  \"${key}\": ${${prefix}_${opt}}")
    endif()
  endforeach()
  if(DEFINED ${prefix}_BLOCKS)
    if(${prefix}_BLOCKS STREQUAL "auto")
      string(APPEND json ",\n  \"blocks\": \"auto\"")
    else()
      string(APPEND json ",\n  \"blocks\": ${${prefix}_BLOCKS}")
    endif()
  endif()
  foreach(pair "FIELD;field" "MATRIX;matrix" "CODE;code" "ALGORITHM;algorithm")
    list(GET pair 0 opt)
    list(GET pair 1 key)
    if(DEFINED ${prefix}_${opt})
      _collplan_json_string(v "${${prefix}_${opt}}")
      string(APPEND json ",\n  \"${key}\": ${v}")
    endif()
  endforeach()
  # Lists: JSON arrays (POINTS 1 2 3, POINTS "1,2,3" and POINTS 1,2 3 are one list).
  foreach(pair "POINTS;points" "PERM;perm" "PHI;phi" "COUNTS;counts" "LOST;lost" "HELPERS;helpers" "TO;to"
               "PASSES;passes")
    list(GET pair 0 opt)
    list(GET pair 1 key)
    if(DEFINED ${prefix}_${opt})
      set(items)
      foreach(item IN LISTS ${prefix}_${opt})
        string(REPLACE "," ";" parts "${item}")
        foreach(x IN LISTS parts)
          if(opt STREQUAL "PASSES")
            if(x STREQUAL "none")
              continue()
            endif()
            set(x "\"${x}\"")
          endif()
          list(APPEND items "${x}")
        endforeach()
      endforeach()
      list(JOIN items ", " joined)
      string(APPEND json ",\n  \"${key}\": [${joined}]")
    endif()
  endforeach()
  if(DEFINED ${prefix}_SYSTEMATIC)
    if(${prefix}_SYSTEMATIC)
      string(APPEND json ",\n  \"systematic\": true")
    else()
      string(APPEND json ",\n  \"systematic\": false")
    endif()
  endif()
  set(deps)
  foreach(pair "MATRIX_FILE;matrix_file" "GENERATOR;generator")
    list(GET pair 0 opt)
    list(GET pair 1 key)
    if(DEFINED ${prefix}_${opt})
      get_filename_component(f "${${prefix}_${opt}}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      _collplan_json_string(v "${f}")
      string(APPEND json ",\n  \"${key}\": ${v}")
      list(APPEND deps "${f}")
    endif()
  endforeach()
  if(${prefix}_EXCLUSIVE)
    string(APPEND json ",\n  \"exclusive\": true")
  endif()
  string(APPEND json "\n}\n")
  set(spec "${dir}/${name}.spec.json")
  _collplan_write_if_changed("${spec}" "${json}")
  set(${out_spec} "${spec}" PARENT_SCOPE)
  set(${out_deps} "${deps}" PARENT_SCOPE)
endfunction()

# Sets <out_var> to the plan's rank count: N for decentralized-encode (which
# needs it), K otherwise.
function(_collplan_num_ranks context prefix out_var)
  if(${prefix}_OP STREQUAL "decentralized-encode")
    if(NOT DEFINED ${prefix}_N)
      message(FATAL_ERROR "${context}: decentralized-encode needs N (its rank count)")
    endif()
    set(${out_var} ${${prefix}_N} PARENT_SCOPE)
  else()
    set(${out_var} ${${prefix}_K} PARENT_SCOPE)
  endif()
endfunction()

# Appends to the list <commands_var> the command writing the text dump of
# <plan> to <text>.
function(_collplan_text_command commands_var plan text)
  get_property(fdir GLOBAL PROPERTY COLLPLAN_FUNCTIONS_DIR)
  set(${commands_var} ${${commands_var}} COMMAND "${CMAKE_COMMAND}" -DCOLLPLAN=$<TARGET_FILE:collplan::collplan>
      -DPLAN=${plan} -DOUT=${text} -P "${fdir}/collplan_show.cmake" PARENT_SCOPE)
endfunction()

function(collplan_add_plan target)
  _collplan_spec_keywords()
  cmake_parse_arguments(PARSE_ARGV 1 ARG "CPP;BINARY;TEXT;${_collplan_spec_flags}"
    "${_collplan_spec_values};NAME;RANK" "${_collplan_spec_lists}")
  set(ctx "collplan_add_plan(${target})")
  _collplan_check_args("${ctx}" ARG
    "${_collplan_spec_values};${_collplan_spec_lists};${_collplan_spec_flags};NAME;RANK;CPP;BINARY;TEXT")
  if(DEFINED ARG_RANK AND NOT ARG_RANK MATCHES "^[0-9]+$")
    _collplan_bad("${ctx}" RANK "${ARG_RANK}" "a rank of the plan, 0..K-1")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "${ctx}: no target named '${target}'")
  endif()
  if(NOT ARG_NAME)
    string(MAKE_C_IDENTIFIER "${target}_plan" ARG_NAME)
  endif()
  if(NOT ARG_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${ctx}: NAME '${ARG_NAME}' is not a C++ identifier")
  endif()
  if(NOT ARG_CPP AND NOT ARG_BINARY)
    set(ARG_BINARY ON)
  endif()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/collplan/${ARG_NAME}")
  file(MAKE_DIRECTORY "${dir}")
  _collplan_write_spec(ARG "${dir}" "${ARG_NAME}" spec extra_deps)
  set(options "${dir}/${ARG_NAME}.options")
  set(plan "${dir}/${ARG_NAME}.cplan")
  _collplan_write_if_changed("${options}"
    "cpp=${ARG_CPP}\nrank=${ARG_RANK}\ntext=${ARG_TEXT}\n")

  set(outputs "${plan}")
  set(commands
    COMMAND collplan::collplan compile --spec "${spec}" -q -o "${plan}"
    COMMAND collplan::collplan check "${plan}")
  if(ARG_TEXT)
    set(text "${dir}/${ARG_NAME}.txt")
    list(APPEND outputs "${text}")
    _collplan_text_command(commands "${plan}" "${text}")
    set(${ARG_NAME}_TEXT_FILE "${text}" PARENT_SCOPE)
  endif()
  set(sources)
  if(ARG_CPP)
    # Every rank of the plan: N for decentralized-encode, K otherwise.
    _collplan_num_ranks("${ctx}" ARG num_ranks)
    set(rank_args)
    if(DEFINED ARG_RANK)
      set(ranks ${ARG_RANK})
      set(rank_args --rank ${ARG_RANK})
    else()
      math(EXPR last "${num_ranks} - 1")
      foreach(r RANGE ${last})
        list(APPEND ranks ${r})
      endforeach()
    endif()
    list(APPEND outputs "${dir}/${ARG_NAME}.h")
    foreach(r IN LISTS ranks)
      list(APPEND sources "${dir}/${ARG_NAME}_rank${r}.cpp")
    endforeach()
    list(APPEND outputs ${sources})
    list(APPEND commands COMMAND collplan::collplan emit-cpp "${plan}" -o "${dir}" --name "${ARG_NAME}" ${rank_args})
  endif()

  add_custom_command(
    OUTPUT ${outputs}
    ${commands}
    DEPENDS "${spec}" "${options}" $<TARGET_FILE:collplan::collplan> ${extra_deps}
    WORKING_DIRECTORY "${dir}"
    COMMENT "collplan: compiling and checking plan ${ARG_NAME} (${ARG_OP} K=${ARG_K})"
    VERBATIM)

  if(ARG_BINARY)
    target_sources(${target} PRIVATE "${plan}")
  endif()
  if(ARG_TEXT)
    target_sources(${target} PRIVATE "${text}")
  endif()
  if(ARG_CPP)
    target_sources(${target} PRIVATE ${sources} "${dir}/${ARG_NAME}.h")
    target_include_directories(${target} PRIVATE "${dir}")
    target_link_libraries(${target} PRIVATE collplan::embedded)
  endif()
  set(${ARG_NAME}_PLAN_FILE "${plan}" PARENT_SCOPE)
  set(${ARG_NAME}_SOURCE_DIR "${dir}" PARENT_SCOPE)
endfunction()

function(collplan_add_plan_libraries name)
  _collplan_spec_keywords()
  cmake_parse_arguments(PARSE_ARGV 1 ARG "STATIC;OBJECT;BINARY;TEXT;${_collplan_spec_flags}"
    "${_collplan_spec_values}" "RANKS;${_collplan_spec_lists}")
  set(ctx "collplan_add_plan_libraries(${name})")
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${ctx}: the name '${name}' is not a C identifier (it is the C++ namespace, "
      "the file prefix and the target prefix)")
  endif()
  _collplan_check_args("${ctx}" ARG
    "${_collplan_spec_values};${_collplan_spec_lists};${_collplan_spec_flags};RANKS;STATIC;OBJECT;BINARY;TEXT")
  if(ARG_STATIC AND ARG_OBJECT)
    message(FATAL_ERROR "${ctx}: STATIC and OBJECT are both given; the rank libraries are one or the other")
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CXX" IN_LIST languages)
    message(FATAL_ERROR "${ctx}: the rank libraries are C++; enable CXX first (project(... CXX))")
  endif()
  set(type STATIC)
  if(ARG_OBJECT)
    set(type OBJECT)
  endif()

  # The chosen ranks, each checked against the plan's rank count.
  _collplan_num_ranks("${ctx}" ARG num_ranks)
  set(count_name K)
  if(ARG_OP STREQUAL "decentralized-encode")
    set(count_name N)
  endif()
  if(NOT num_ranks MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "${ctx}: ${count_name} '${num_ranks}' is not a positive rank count")
  endif()
  math(EXPR last "${num_ranks} - 1")
  set(ranks)
  set(all OFF)
  string(TOUPPER "${ARG_RANKS}" ranks_upper)
  if(NOT DEFINED ARG_RANKS OR ranks_upper STREQUAL "ALL")
    set(all ON)
    foreach(r RANGE ${last})
      list(APPEND ranks ${r})
    endforeach()
  else()
    list(JOIN ARG_RANKS " " given)
    set(items)
    foreach(arg IN LISTS ARG_RANKS)
      string(REPLACE "," ";" parts "${arg}")
      list(APPEND items ${parts})
    endforeach()
    foreach(item IN LISTS items)
      if(item MATCHES "^[0-9]+$")
        set(from ${item})
        set(to ${item})
      elseif(item MATCHES "^([0-9]+)-([0-9]+)$")
        set(from ${CMAKE_MATCH_1})
        set(to ${CMAKE_MATCH_2})
      elseif(item STREQUAL "ALL" OR item STREQUAL "all")
        message(FATAL_ERROR "${ctx}: RANKS ALL stands alone (RANKS ${given})")
      else()
        message(FATAL_ERROR "${ctx}: RANKS '${item}' is not a rank, a range a-b of ranks or ALL")
      endif()
      foreach(bound from to)
        string(REGEX REPLACE "^0+([0-9])" "\\1" ${bound} "${${bound}}")
        string(LENGTH "${${bound}}" digits)
        if(digits GREATER 10 OR ${bound} GREATER last)
          message(FATAL_ERROR "${ctx}: rank ${${bound}} (RANKS '${item}') is out of range: "
            "the plan's ranks are 0..${last} (${count_name} = ${num_ranks})")
        endif()
      endforeach()
      if(from GREATER to)
        message(FATAL_ERROR "${ctx}: RANKS range '${item}' runs backwards")
      endif()
      foreach(r RANGE ${from} ${to})
        if(DEFINED _collplan_seen_${r})
          message(FATAL_ERROR "${ctx}: rank ${r} is given twice (RANKS ${given})")
        endif()
        set(_collplan_seen_${r} ON)
        list(APPEND ranks ${r})
      endforeach()
    endforeach()
    list(SORT ranks COMPARE NATURAL)
  endif()
  list(LENGTH ranks num_chosen)

  foreach(t ${name} ${name}_generate)
    if(TARGET ${t})
      message(FATAL_ERROR "${ctx}: a target named '${t}' already exists")
    endif()
  endforeach()
  foreach(r IN LISTS ranks)
    if(TARGET ${name}_rank${r})
      message(FATAL_ERROR "${ctx}: a target named '${name}_rank${r}' already exists")
    endif()
  endforeach()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/collplan/${name}")
  file(MAKE_DIRECTORY "${dir}")
  _collplan_write_spec(ARG "${dir}" "${name}" spec extra_deps)
  if(all)
    set(ranks_arg all)
    set(ranks_text "all ${num_ranks} ranks")
  else()
    list(JOIN ranks "," ranks_arg)
    if(num_chosen LESS_EQUAL 16)
      set(ranks_text "ranks ${ranks_arg}")
    else()
      set(ranks_text "${num_chosen} ranks")
    endif()
  endif()
  set(options "${dir}/${name}.options")
  set(plan "${dir}/${name}.cplan")
  _collplan_write_if_changed("${options}"
    "ranks=${ranks_arg}\nbinary=${ARG_BINARY}\ntext=${ARG_TEXT}\n")

  set(outputs "${plan}" "${dir}/${name}.h")
  set(commands
    COMMAND collplan::collplan compile --spec "${spec}" -q -o "${plan}"
    COMMAND collplan::collplan check "${plan}"
    COMMAND collplan::collplan emit-cpp "${plan}" -o "${dir}" --name "${name}" --ranks "${ranks_arg}")
  foreach(r IN LISTS ranks)
    list(APPEND outputs "${dir}/${name}_rank${r}.cpp")
    if(ARG_BINARY)
      list(APPEND outputs "${dir}/${name}_rank${r}.cplan")
      list(APPEND commands COMMAND collplan::collplan extract "${plan}" --rank ${r} -o "${dir}/${name}_rank${r}.cplan")
    endif()
  endforeach()
  if(ARG_TEXT)
    set(text "${dir}/${name}.txt")
    list(APPEND outputs "${text}")
    _collplan_text_command(commands "${plan}" "${text}")
    set(${name}_TEXT_FILE "${text}" PARENT_SCOPE)
  endif()

  add_custom_command(
    OUTPUT ${outputs}
    ${commands}
    DEPENDS "${spec}" "${options}" $<TARGET_FILE:collplan::collplan> ${extra_deps}
    WORKING_DIRECTORY "${dir}"
    COMMENT "collplan: compiling and checking plan ${name} (${ARG_OP} K=${ARG_K}), emitting ${ranks_text}"
    VERBATIM)
  # One target runs the command; the libraries wait for it (so no generator
  # runs it twice).
  add_custom_target(${name}_generate DEPENDS ${outputs})

  add_library(${name} INTERFACE)
  target_include_directories(${name} INTERFACE "$<BUILD_INTERFACE:${dir}>")
  target_link_libraries(${name} INTERFACE collplan::embedded)
  add_dependencies(${name} ${name}_generate)
  foreach(r IN LISTS ranks)
    add_library(${name}_rank${r} ${type} "${dir}/${name}_rank${r}.cpp" "${dir}/${name}.h")
    target_link_libraries(${name}_rank${r} PUBLIC ${name})
    add_dependencies(${name}_rank${r} ${name}_generate)
    if(ARG_BINARY)
      target_sources(${name}_rank${r} PRIVATE "${dir}/${name}_rank${r}.cplan")
    endif()
  endforeach()

  set(${name}_PLAN_FILE "${plan}" PARENT_SCOPE)
  set(${name}_SOURCE_DIR "${dir}" PARENT_SCOPE)
  set(${name}_RANKS "${ranks}" PARENT_SCOPE)
endfunction()

# collplan_add_plan(): compile a collplan plan at build time and add it to a
# target. Part of the collplan CMake package (find_package(collplan)); the
# collplan build tree uses it too (plans/).
#
#   collplan_add_plan(<target>
#       OP <op> K <K> [N <N>] [P <p>] [LAMBDA <lambda>] [FIELD <field>]
#       [MATRIX <family>] [CODE <code>] [SEED <seed>] [POINTS <p0,p1,...>] [MATRIX_FILE <file>]
#       [ROOT <root>] [BLOCKS <n>] [COUNTS <c0,c1,...>] [EXCLUSIVE]
#       [ALGORITHM <name>] [NAME <identifier>] [RANK <r>]
#       [CPP] [BINARY] [TEXT])
#
# At build time it runs `collplan compile` on the spec (the options mean what
# the CLI flags of the same names mean; see `collplan compile --help`), then
# `collplan check` on the plan, then, with CPP, `collplan emit-cpp` (all
# ranks, or RANK alone). With neither CPP nor BINARY it acts as BINARY.
# decentralized-encode needs N (its rank count) and a matrix: CODE (e.g. rs)
# or MATRIX/MATRIX_FILE.
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
# Rebuilding: the spec and options are written to <name>.spec.json and
# <name>.options at configure time, only when they change; the generation
# depends on them, on the collplan executable and on MATRIX_FILE, so editing
# the call (or the matrix file) regenerates the plan and recompiles the
# target, and nothing else does.

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

function(collplan_add_plan target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "CPP;BINARY;TEXT;EXCLUSIVE"
    "OP;K;N;P;LAMBDA;FIELD;MATRIX;CODE;SEED;POINTS;MATRIX_FILE;ROOT;BLOCKS;COUNTS;ALGORITHM;NAME;RANK" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "collplan_add_plan(${target}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "collplan_add_plan(${target}): no target named '${target}'")
  endif()
  foreach(req OP K)
    if(NOT DEFINED ARG_${req})
      message(FATAL_ERROR "collplan_add_plan(${target}): ${req} is required")
    endif()
  endforeach()
  if(NOT ARG_NAME)
    string(MAKE_C_IDENTIFIER "${target}_plan" ARG_NAME)
  endif()
  if(NOT ARG_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "collplan_add_plan(${target}): NAME '${ARG_NAME}' is not a C++ identifier")
  endif()
  if(NOT ARG_CPP AND NOT ARG_BINARY)
    set(ARG_BINARY ON)
  endif()
  if(NOT ARG_ALGORITHM)
    set(ARG_ALGORITHM auto)
  endif()

  # The spec file `collplan compile --spec` reads.
  set(json "{\n  \"op\": \"${ARG_OP}\",\n  \"K\": ${ARG_K}")
  foreach(pair "N;N" "P;p" "LAMBDA;lambda" "SEED;seed" "ROOT;root" "BLOCKS;blocks")
    list(GET pair 0 opt)
    list(GET pair 1 key)
    if(DEFINED ARG_${opt})
      string(APPEND json ",\n  \"${key}\": ${ARG_${opt}}")
    endif()
  endforeach()
  foreach(pair "FIELD;field" "MATRIX;matrix" "CODE;code" "POINTS;points" "COUNTS;counts")
    list(GET pair 0 opt)
    list(GET pair 1 key)
    if(DEFINED ARG_${opt})
      string(APPEND json ",\n  \"${key}\": \"${ARG_${opt}}\"")
    endif()
  endforeach()
  set(extra_deps)
  if(DEFINED ARG_MATRIX_FILE)
    get_filename_component(mf "${ARG_MATRIX_FILE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    string(APPEND json ",\n  \"matrix_file\": \"${mf}\"")
    list(APPEND extra_deps "${mf}")
  endif()
  if(ARG_EXCLUSIVE)
    string(APPEND json ",\n  \"exclusive\": true")
  endif()
  string(APPEND json "\n}\n")

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/collplan/${ARG_NAME}")
  file(MAKE_DIRECTORY "${dir}")
  set(spec "${dir}/${ARG_NAME}.spec.json")
  set(options "${dir}/${ARG_NAME}.options")
  set(plan "${dir}/${ARG_NAME}.cplan")
  _collplan_write_if_changed("${spec}" "${json}")
  _collplan_write_if_changed("${options}"
    "algorithm=${ARG_ALGORITHM}\ncpp=${ARG_CPP}\nrank=${ARG_RANK}\ntext=${ARG_TEXT}\n")

  set(outputs "${plan}")
  set(commands
    COMMAND collplan::collplan compile --spec "${spec}" --algorithm "${ARG_ALGORITHM}" -q -o "${plan}"
    COMMAND collplan::collplan check "${plan}")
  if(ARG_TEXT)
    set(text "${dir}/${ARG_NAME}.txt")
    get_property(fdir GLOBAL PROPERTY COLLPLAN_FUNCTIONS_DIR)
    list(APPEND outputs "${text}")
    list(APPEND commands COMMAND "${CMAKE_COMMAND}" -DCOLLPLAN=$<TARGET_FILE:collplan::collplan> -DPLAN=${plan}
         -DOUT=${text} -P "${fdir}/collplan_show.cmake")
    set(${ARG_NAME}_TEXT_FILE "${text}" PARENT_SCOPE)
  endif()
  set(sources)
  if(ARG_CPP)
    # Every rank of the plan: N for decentralized-encode, K otherwise.
    set(num_ranks ${ARG_K})
    if(ARG_OP STREQUAL "decentralized-encode")
      if(NOT DEFINED ARG_N)
        message(FATAL_ERROR "collplan_add_plan(${target}): decentralized-encode needs N (its rank count)")
      endif()
      set(num_ranks ${ARG_N})
    endif()
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

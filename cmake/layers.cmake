# The layers of collplan and the direction between them, enforced twice:
#
#   by the linker   every layer is its own static library linking only the
#                   layers below it, and collplan_layer() builds a small
#                   program from each library's whole archive plus those
#                   layers: a symbol taken from a layer above is an
#                   undefined reference, and the build fails;
#   by a test       layers:includes (tests/layers/check_layers.py) reads
#                   the table this file writes (layers.json in the build
#                   directory) and fails on any #include of a header of a
#                   layer that is not below the including file's, and when
#                   docs/architecture.md's table disagrees with it.
#
# collplan_layer(<name> PATHS <path prefixes...> [DEPS <layers...>]
#                [SOURCES <files...>] [INTERFACE] [NO_LIBRARY])
#   PATHS    the files the layer owns, as prefixes relative to the source
#            root (a folder "compiler/ir/", or a file stem
#            "runtime/transport/tcp" for tcp.h and tcp.cpp); a file belongs
#            to the layer with the longest matching prefix.
#   DEPS     the layers directly below (their own DEPS are allowed too).
#   SOURCES  the library's sources (default: every .cpp under PATHS).
#   INTERFACE   a header-only layer (an INTERFACE library).
#   NO_LIBRARY  record the layer only (the driver: an executable).
# The target is collplan_<name>; it links collplan_<dep> PUBLIC for every dep.

define_property(GLOBAL PROPERTY COLLPLAN_LAYERS BRIEF_DOCS "collplan layers" FULL_DOCS "see cmake/layers.cmake")

function(collplan_layer name)
  cmake_parse_arguments(L "INTERFACE;NO_LIBRARY" "" "PATHS;DEPS;SOURCES" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY COLLPLAN_LAYERS ${name})
  set_property(GLOBAL PROPERTY COLLPLAN_LAYER_${name}_PATHS ${L_PATHS})
  set_property(GLOBAL PROPERTY COLLPLAN_LAYER_${name}_DEPS ${L_DEPS})
  if(L_NO_LIBRARY)
    return()
  endif()
  set(target collplan_${name})
  set(deps)
  foreach(d IN LISTS L_DEPS)
    list(APPEND deps collplan_${d})
  endforeach()
  if(L_INTERFACE)
    add_library(${target} INTERFACE)
    target_link_libraries(${target} INTERFACE ${deps})
    return()
  endif()
  set(sources ${L_SOURCES})
  if(NOT sources)
    foreach(p IN LISTS L_PATHS)
      file(GLOB s CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${p}*.cpp)
      list(APPEND sources ${s})
    endforeach()
  endif()
  add_library(${target} ${sources})
  target_link_libraries(${target} PUBLIC ${deps})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  # The link check: the whole archive, resolved against the layers below only.
  add_executable(collplan_layer_check_${name} ${PROJECT_SOURCE_DIR}/cmake/layer_check_main.cpp)
  target_link_libraries(collplan_layer_check_${name} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${target}>")
endfunction()

# Writes <build>/layers.json: {"<layer>": {"paths": [...], "deps": [...]}, ...}
# for tests/layers/check_layers.py. Called once every layer is declared.
function(collplan_write_layer_table)
  get_property(layers GLOBAL PROPERTY COLLPLAN_LAYERS)
  set(json "{")
  set(first TRUE)
  foreach(l IN LISTS layers)
    get_property(paths GLOBAL PROPERTY COLLPLAN_LAYER_${l}_PATHS)
    get_property(deps GLOBAL PROPERTY COLLPLAN_LAYER_${l}_DEPS)
    list(TRANSFORM paths PREPEND "\"")
    list(TRANSFORM paths APPEND "\"")
    list(TRANSFORM deps PREPEND "\"")
    list(TRANSFORM deps APPEND "\"")
    list(JOIN paths ", " p)
    list(JOIN deps ", " d)
    if(NOT first)
      string(APPEND json ",")
    endif()
    set(first FALSE)
    string(APPEND json "\n  \"${l}\": {\"paths\": [${p}], \"deps\": [${d}]}")
  endforeach()
  string(APPEND json "\n}\n")
  file(WRITE ${PROJECT_BINARY_DIR}/layers.json "${json}")
endfunction()

# The installable CMake package: find_package(collplan) then gives
#   collplan::collplan, collplan::embedded   (collplanTargets)
#   collplan::runtime, collplan::tcp         (collplanRuntimeTargets) and their
#     dependencies collplan::ir, collplan::field, collplan::gf, collplan::support
#   collplan::compiler (every compiler layer), collplan::user_op
#                                            (collplanCompilerTargets)
#   collplan::mpi                            (collplanMpiTargets, when built)
# and collplan_add_plan() (cmake/collplanConfig.cmake.in,
# cmake/collplanFunctions.cmake).
#
# Installed headers (the include layout of runtime/CMakeLists.txt): every
# public header under <prefix>/include/collplan/, at the path its #include
# line names in this tree, so one #include line works in both.
include(CMakePackageConfigHelpers)

set(COLLPLAN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/collplan)
set(COLLPLAN_INSTALL_TEMPLATES ${CMAKE_INSTALL_DATADIR}/collplan/templates)
set(COLLPLAN_INSTALL_INCLUDE ${CMAKE_INSTALL_INCLUDEDIR}/collplan)

install(TARGETS collplan collplan_embedded EXPORT collplanTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES runtime/embedded/collplan_embedded.h runtime/embedded/collplan_kernels.h
  runtime/embedded/collplan_gf.h runtime/embedded/collplan_gf_base.h runtime/embedded/collplan_gf_avx2.h
  runtime/embedded/collplan_gf_gfni.h runtime/embedded/collplan_gf_neon.h DESTINATION ${COLLPLAN_INSTALL_INCLUDE})
install(FILES templates/rank.template.cpp templates/dispatch.template.h templates/README.md
  DESTINATION ${COLLPLAN_INSTALL_TEMPLATES})
install(EXPORT collplanTargets NAMESPACE collplan:: DESTINATION ${COLLPLAN_INSTALL_CMAKEDIR})

# The runtime (collplan::runtime, collplan::tcp): the plan IR and the field
# it names, the GF kernels, the engine with the threads transport and the C
# API, and the TCP transport. Nothing of the compiler above the IR: an
# application that replays plans links no generator, matrix or checker.
# Static libraries by default; their private dependencies (ISA-L, xxHash)
# are found again by the config file.
install(TARGETS collplan_support collplan_field collplan_ir collplan_gf collplan_runtime collplan_tcp
  EXPORT collplanRuntimeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT collplanRuntimeTargets NAMESPACE collplan:: DESTINATION ${COLLPLAN_INSTALL_CMAKEDIR})
# The compiler's layers (collplan::compiler is all of them) and the
# user-operator replay, which proves operand order with the checker.
install(TARGETS collplan_matrix collplan_json collplan_passes collplan_gen collplan_pipeline collplan_backend
  collplan_compiler collplan_user_op
  EXPORT collplanCompilerTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT collplanCompilerTargets NAMESPACE collplan:: DESTINATION ${COLLPLAN_INSTALL_CMAKEDIR})
foreach(dir support field ir matrix json passes gen pipeline backend)
  install(DIRECTORY compiler/${dir} DESTINATION ${COLLPLAN_INSTALL_INCLUDE} FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES runtime/engine.h runtime/trace.h runtime/transport.h runtime/user_op.h runtime/op_program.h
  runtime/reduce_ops.h
  DESTINATION ${COLLPLAN_INSTALL_INCLUDE}/runtime)
install(FILES runtime/transport/threads.h runtime/transport/tcp.h runtime/transport/tcp_wire.h
  DESTINATION ${COLLPLAN_INSTALL_INCLUDE}/runtime/transport)
install(FILES runtime/gf/gf_kernels.h DESTINATION ${COLLPLAN_INSTALL_INCLUDE}/runtime/gf)
install(FILES runtime/capi/collplan.h runtime/capi/collplan_tcp.h DESTINATION ${COLLPLAN_INSTALL_INCLUDE})

set(COLLPLAN_EXPORTS_MPI OFF)
if(COLLPLAN_HAVE_MPI)
  set(COLLPLAN_EXPORTS_MPI ON)
  install(TARGETS collplan_mpi EXPORT collplanMpiTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # libcollplan_pmpi.so: preloaded into MPI programs (docs/pmpi.md), or
  # linked as collplan::pmpi before MPI.
  install(TARGETS collplan_pmpi EXPORT collplanMpiTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  # `collplan tune` runs it from collplan's directory.
  install(TARGETS collplan-tune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT collplanMpiTargets NAMESPACE collplan:: DESTINATION ${COLLPLAN_INSTALL_CMAKEDIR})
  install(FILES runtime/transport/mpi.h DESTINATION ${COLLPLAN_INSTALL_INCLUDE}/runtime/transport)
  install(FILES runtime/capi/collplan_mpi.h DESTINATION ${COLLPLAN_INSTALL_INCLUDE})
endif()

configure_package_config_file(cmake/collplanConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/collplanConfig.cmake
  INSTALL_DESTINATION ${COLLPLAN_INSTALL_CMAKEDIR}
  PATH_VARS COLLPLAN_INSTALL_TEMPLATES)
# 0.x: a minor version may change the plan format or the emitted code.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/collplanConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/collplanConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/collplanConfigVersion.cmake
  cmake/collplanFunctions.cmake
  cmake/collplan_show.cmake
  DESTINATION ${COLLPLAN_INSTALL_CMAKEDIR})

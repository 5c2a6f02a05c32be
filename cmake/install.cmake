# The installable CMake package: find_package(collplan) then gives
# collplan::collplan, collplan::embedded and collplan_add_plan()
# (cmake/collplanConfig.cmake.in, cmake/collplanFunctions.cmake).
include(CMakePackageConfigHelpers)

set(COLLPLAN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/collplan)
set(COLLPLAN_INSTALL_TEMPLATES ${CMAKE_INSTALL_DATADIR}/collplan/templates)

install(TARGETS collplan collplan_embedded EXPORT collplanTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES runtime/embedded/collplan_embedded.h runtime/embedded/collplan_kernels.h
  runtime/embedded/collplan_kernels_x86.inc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/collplan)
install(FILES templates/rank.template.cpp templates/dispatch.template.h templates/README.md
  DESTINATION ${COLLPLAN_INSTALL_TEMPLATES})
install(EXPORT collplanTargets NAMESPACE collplan:: DESTINATION ${COLLPLAN_INSTALL_CMAKEDIR})

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

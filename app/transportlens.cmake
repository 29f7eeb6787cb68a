# `transportlens`: the desktop app. Composition only: parse the command line, open a session, show the window.
add_executable(transportlens
  ${CMAKE_CURRENT_LIST_DIR}/gui/main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gui/latency_benchmark.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gui/openmp_wait_policy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gui/quit_on_signal.cpp
)
set_target_properties(transportlens PROPERTIES AUTOMOC ON)
target_link_libraries(transportlens PRIVATE tl_widgets)
target_compile_options(transportlens PRIVATE -Wall -Wextra)
# Checkpoints open through the model layer when the build has LibTorch.
if(TL_TORCH)
  target_link_libraries(transportlens PRIVATE tl_model)
  target_compile_definitions(transportlens PRIVATE TL_WITH_TORCH=1)
endif()
vtk_module_autoinit(TARGETS transportlens MODULES ${VTK_LIBRARIES})

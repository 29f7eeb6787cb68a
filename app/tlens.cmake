# `tlens`: the command-line front end. Links tl_core; `tlens render` also needs the views (tl_widgets, Qt)
# and gets them only in TL_GUI builds, otherwise it reports that it was built without the GUI.
add_executable(tlens
  cli/main.cpp
  cli/arguments.cpp
  cli/help.cpp
  cli/plan_command.cpp
  cli/plan_metrics.cpp
  cli/banded_options.cpp
  cli/grad_command.cpp
  cli/certify_command.cpp
  cli/input_options.cpp
  cli/compare_command.cpp
  cli/compare_report.cpp
  cli/text_table.cpp
  cli/render_command.cpp
  cli/bench_command.cpp
  cli/bench_common.cpp
  cli/cpu_floor.cpp
  cli/least_work.cpp
  cli/backward_bench.cpp
  cli/reference_bench.cpp
  cli/train_command.cpp
  cli/terminal_progress.cpp
  cli/rank_decay_command.cpp
  cli/rank_decay_figures.cpp
  cli/asap_fit_command.cpp
)
# Checkpoint commands need the model layer (LibTorch); without it model_commands_unavailable.cpp answers.
# `tlens train` checks its flags in every build and trains only when TL_WITH_TORCH is defined.
if(TL_TORCH)
  target_sources(tlens PRIVATE cli/model_options.cpp cli/extract_command.cpp cli/eval_command.cpp
                               cli/asap_model_commands.cpp
                               cli/training_bench.cpp cli/load_bench.cpp)
  target_link_libraries(tlens PRIVATE tl_model)
  target_compile_definitions(tlens PRIVATE TL_WITH_TORCH=1)
else()
  target_sources(tlens PRIVATE cli/model_commands_unavailable.cpp)
endif()
target_include_directories(tlens PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cli ${PROJECT_SOURCE_DIR})
target_link_libraries(tlens PRIVATE tl_core)
# `tlens bench` finds scripts/reference/bench_reference.py here unless TL_REFERENCE_DIR says otherwise.
target_compile_definitions(tlens PRIVATE TL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_compile_options(tlens PRIVATE -Wall -Wextra)
if(TL_CUDA_ENABLED)
  target_sources(tlens PRIVATE cli/gpu_bench.cpp)
  target_link_libraries(tlens PRIVATE tl_cuda)
  target_compile_definitions(tlens PRIVATE TL_WITH_CUDA=1)
endif()
if(TL_GUI)
  target_link_libraries(tlens PRIVATE tl_widgets Qt6::Widgets)
  target_compile_definitions(tlens PRIVATE TL_WITH_GUI=1)
endif()

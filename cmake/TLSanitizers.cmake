# Sanitizer and fuzzing builds (docs/reliability.md). Both instrument every target of the build, so they live in
# their own build folder (scripts/sanitize, scripts/fuzz), never in the Release build the README's commands use.
#
# TL_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer. Any report aborts the process (no recovery), so a
# test that triggers one fails instead of printing a warning nobody reads.
# TL_FUZZ: the libFuzzer targets of tests/fuzz; needs clang (Debian's clang and libclang-rt-14-dev) and implies
# TL_SANITIZE, because a fuzzer without sanitizers only finds crashes, not the reads one byte past a buffer.
option(TL_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(TL_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only; implies TL_SANITIZE)" OFF)

if(TL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TL_FUZZ needs clang (configure with CC=clang CXX=clang++; scripts/fuzz does)")
  endif()
  set(TL_SANITIZE ON CACHE BOOL "" FORCE)
  # Coverage feedback for the fuzzers in every library; the fuzz executables link libFuzzer itself.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(TL_SANITIZE)
  set(tl_sanitizer_flags -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${tl_sanitizer_flags}>")
  # -O1 after Release's -O3 (later wins): the usual level for ASan and libFuzzer. Instrumented Eigen code at -O3
  # took twice as long to compile, and these builds are two of the three in every CI run.
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-O1>)
  add_link_options(${tl_sanitizer_flags})
endif()

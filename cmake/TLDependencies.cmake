# Every dependency comes from Debian packages installed by scripts/setup; nothing is downloaded here.

find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Threads REQUIRED)
# File formats in core/: gzipped IDX and deflated zip entries, PNG and JPEG images (CMake's own modules).
find_package(ZLIB REQUIRED)
find_package(PNG REQUIRED)
find_package(JPEG REQUIRED)

if(TL_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

if(TL_GUI)
  find_package(Qt6 REQUIRED COMPONENTS Core Gui Widgets OpenGL OpenGLWidgets PrintSupport Svg)
  # Debian's libqcustomplot-dev ships a Qt5 and a Qt6 build; only the Qt6 target may be linked.
  find_package(QCustomPlotQt6 REQUIRED)
  # An explicit component list keeps VTK from pulling its Qt5-built GUISupportQt module.
  find_package(VTK 9.1 REQUIRED COMPONENTS
    CommonCore CommonDataModel CommonColor FiltersCore FiltersGeneral FiltersSources FiltersGeometry
    RenderingCore RenderingOpenGL2 RenderingFreeType RenderingAnnotation InteractionStyle IOImage
    IOExportGL2PS RenderingGL2PSOpenGL2)
endif()

# The CPU operators split their log-sum-exp passes and Eigen its products across cores with OpenMP
# (core/common/parallel.h). Optional for core: without it (e.g. clang without libomp in the fuzz build)
# they run on one thread.
find_package(OpenMP COMPONENTS CXX)
if(TL_TORCH)
  find_package(Torch REQUIRED)
  # Debian's LibTorch runs at::parallel_for on OpenMP, and that function is a header template whose
  # `#pragma omp parallel` is compiled into the caller: without OpenMP a caller's loop runs on one thread
  # whatever --threads says.
  if(NOT OpenMP_CXX_FOUND)
    message(FATAL_ERROR "TL_TORCH needs OpenMP (libgomp, with GCC)")
  endif()
endif()

# TL_CUDA=AUTO turns CUDA on only when a CUDA compiler is present; CUDA stays optional at run time too.
set(TL_CUDA_ENABLED OFF)
if(TL_CUDA STREQUAL "AUTO" OR TL_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
    set(TL_CUDA_ENABLED ON)
  elseif(NOT TL_CUDA STREQUAL "AUTO")
    message(FATAL_ERROR "TL_CUDA=ON but no CUDA compiler was found (install the CUDA toolkit or use -DTL_CUDA=OFF)")
  endif()
endif()

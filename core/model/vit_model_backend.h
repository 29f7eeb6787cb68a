#pragma once
// The ModelBackend of builds with LibTorch: ViT checkpoints through VitRunner, with the loaded checkpoint
// and its latest runs kept, so moving an operator slider re-runs only the swapped layers.
namespace tl {

// Installs the backend for this process (CLI and GUI call it at start-up).
void installVitModelBackend();

}  // namespace tl

"""Front doors over a `RenderResult`: Argo CD CMP, diff and its PR comment, preview, `--services
auto`, the validation gate and plugin inspection. They never load the repository a second time."""

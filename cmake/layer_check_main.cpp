// The program of each layer link check (cmake/layers.cmake): it does nothing;
// linking the layer's whole archive against the layers below is the check.
int main() { return 0; }

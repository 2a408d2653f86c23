"""``nn.Module`` while tracing: shadows of the user's modules (their state read and checked,
their writes recorded), hooks, the paths eager takes by inspecting inputs, and module scopes."""

// Third-party libraries the dynamic providers use when they run, required from here. A provider's own
// functions are serialized by value and run in Pulumi's dynamic-provider host, where a bare require() in
// them resolves from the program's directory, which may hold another version or none; a module like this
// one is required by name (`alicloud-kubeadm/dist/providers/libraries.js`) from the consumer's
// node_modules, so the require() below resolves the package's own dependency. Built-in modules need none.

/** The `yaml` package this package depends on. */
export function yamlLibrary(): typeof import("yaml") {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require("yaml") as typeof import("yaml");
}

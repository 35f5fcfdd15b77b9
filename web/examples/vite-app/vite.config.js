// Relative asset URLs: the test serves dist/ under a sub-path.
export default { base: "./", build: { target: "es2022" }, worker: { format: "es" } };

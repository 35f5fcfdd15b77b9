export * from "./packfs_web.js";
export { default } from "./packfs_web.js";

// Serves the demo page with the test packs, for trying it by hand:
//   npm run serve    (after web/build.sh)    then open the printed URL.
import { startServer } from "./server.mjs";
import { demoPack, bigFiles, packOf } from "./fixtures.mjs";

const port = Number(process.env.PORT ?? 8080);
const server = await startServer({
  port,
  files: { "/fixtures/demo.pack": await demoPack(), "/fixtures/big.pack": await packOf(bigFiles()) },
});
console.log(`demo: ${server.url}/www/?url=/fixtures/demo.pack`);
console.log(`      ${server.url}/www/ (packs at /fixtures/demo.pack and /fixtures/big.pack)`);

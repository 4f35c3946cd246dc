/**
 * A tab of test/browser/service_worker.test.mjs: registers Kiln's service-worker module (served
 * by Vite from the sources, as a module) as an app would, waits for it to be active, then runs
 * shared.ts's page with the registration in `globalThis.kilnRegistration`, so that its
 * `open("service-worker")` connects through it.
 */
const url = new URL("../../../src/adapters/browser/service_worker.ts", import.meta.url);
const registration = await navigator.serviceWorker.register(url, { type: "module" });
const t0 = Date.now();
while (!registration.active && Date.now() - t0 < 60_000) {
  await new Promise((r) => setTimeout(r, 50));
}
Object.assign(globalThis, { kilnRegistration: registration });
await import("./shared.ts");

import type { Services } from '../services.js';

/**
 * One `T` per services (per instance of the server), made on first use and closed with the
 * services: `close` is pushed on their closers, which run in reverse, so it runs before the
 * store it writes to closes.
 */
export function perServices<T extends { close(): Promise<void> | void }>(create: (services: Services) => T): (services: Services) => T {
  const made = new WeakMap<Services, T>();
  return (services) => {
    let t = made.get(services);
    if (t === undefined) {
      const created = create(services);
      t = created;
      made.set(services, created);
      services.closers.push(() => created.close());
    }
    return t;
  };
}

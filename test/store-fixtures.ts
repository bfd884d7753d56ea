/** Collections the store tests share (the contract suite, the file store's own tests, load and checkpoint). */
import { defineCollection } from '../src/state/index.js';

/** A small record with an optional, nullable index field; three records a segment, to cross segments early. */
export interface Thing {
  id: string;
  n: number;
  tag?: string | null;
  list?: string[];
}
export const THINGS = defineCollection<Thing>({ name: 'things', key: 'id', indexes: ['tag', 'n'], segmentSize: 3 });

/** A record of the load and checkpoint tests: many of them, two index fields. */
export interface Item {
  id: string;
  owner: string;
  n: number;
}
export const ITEMS = defineCollection<Item>({ name: 'items', key: 'id', indexes: ['owner', 'n'], segmentSize: 1000 });

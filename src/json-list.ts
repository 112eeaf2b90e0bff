/**
 * A list whose JSON is made element by element through `encode`: what a component hands out as the
 * written form of a large part of its state (src/stack-state.ts), without making that form for
 * every element at once. JSON.stringify writes it as the encoded array (toJSON); the persistence
 * module writes it in slices, the event loop free between them (src/persist/json-pieces.ts).
 */
export class JsonList<T> {
  constructor(
    readonly items: readonly T[],
    readonly encode: (item: T) => unknown,
  ) {}

  toJSON(): unknown[] {
    return this.items.map(this.encode);
  }
}

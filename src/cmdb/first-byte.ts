/**
 * When a request's first byte really leaves, which the budget's window counts it from (docs/design.md,
 * "The request budget and the server's count"): undici calls a handler's onRequestStart right before
 * it writes the request's head (again when it is written on another connection); this interceptor
 * tells the attempt that asked through the request option `onFirstByte`.
 */
import type { Dispatcher } from 'undici';

/** The request option read by the interceptor: called as the request's first byte leaves. */
export interface FirstByteOption {
  readonly onFirstByte?: () => void;
}

/** Passes every call on to `inner`, and says when the request starts on its connection. */
class FirstByteHandler implements Dispatcher.DispatchHandler {
  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    private readonly left: () => void,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    try {
      this.left();
    } catch {
      // The stamp is the attempt's; a failure in it must not fail the request.
    }
    this.inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>): void {
    this.inner.onRequestUpgrade?.(...args);
  }

  onResponseStart(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>): void {
    this.inner.onResponseStart?.(...args);
  }

  onResponseData(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseData']>>): void {
    this.inner.onResponseData?.(...args);
  }

  onResponseEnd(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseEnd']>>): void {
    this.inner.onResponseEnd?.(...args);
  }

  onResponseError(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseError']>>): void {
    this.inner.onResponseError?.(...args);
  }
}

const stamp: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
  const left = (opts as Dispatcher.DispatchOptions & FirstByteOption).onFirstByte;
  return dispatch(opts, left ? new FirstByteHandler(handler, left) : handler);
};

/** `dispatcher`, telling each request that asks (FirstByteOption) when its first byte leaves. */
export function withFirstByte(dispatcher: Dispatcher): Dispatcher {
  return dispatcher.compose(stamp);
}

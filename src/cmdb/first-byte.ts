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

/** `inner`, every call passed on, and `left` told as the request starts on its connection. */
function firstByteHandler(inner: Dispatcher.DispatchHandler, left: () => void): Dispatcher.DispatchHandler {
  return {
    onRequestStart: (controller, context) => {
      try {
        left();
      } catch {
        // The stamp is the attempt's; a failure in it must not fail the request.
      }
      inner.onRequestStart?.(controller, context);
    },
    onRequestUpgrade: (...args) => inner.onRequestUpgrade?.(...args),
    onResponseStart: (...args) => inner.onResponseStart?.(...args),
    onResponseData: (...args) => inner.onResponseData?.(...args),
    onResponseEnd: (...args) => inner.onResponseEnd?.(...args),
    onResponseError: (...args) => inner.onResponseError?.(...args),
  };
}

const stamp: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
  const left = (opts as Dispatcher.DispatchOptions & FirstByteOption).onFirstByte;
  return dispatch(opts, left ? firstByteHandler(handler, left) : handler);
};

/** `dispatcher`, telling each request that asks (FirstByteOption) when its first byte leaves. */
export function withFirstByte(dispatcher: Dispatcher): Dispatcher {
  return dispatcher.compose(stamp);
}

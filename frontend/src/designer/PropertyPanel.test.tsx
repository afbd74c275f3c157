import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { SPECS } from './fixtures';
import { PropertyPanel } from './PropertyPanel';
import { SpecsContext } from './specs-context';
import { createDesignerStore, DesignerContext } from './store';

afterEach(cleanup);

function renderPanel(readOnly = false) {
  const store = createDesignerStore();
  store.getState().addNode(SPECS.MQInput, { x: 0, y: 0 });
  render(
    <SpecsContext.Provider value={SPECS}>
      <DesignerContext.Provider value={store}>
        <PropertyPanel readOnly={readOnly} serverProblems={[]} onEsqlDiagnostics={() => undefined} />
      </DesignerContext.Provider>
    </SpecsContext.Provider>,
  );
  return store;
}

describe('property panel', () => {
  it('builds one labelled control per spec property and validates as you type', () => {
    const store = renderPanel();
    const queue = screen.getByLabelText(/Queue name/);
    expect(screen.getByText('Queue name is required')).toBeTruthy();
    fireEvent.change(queue, { target: { value: 'ORDERS.IN' } });
    expect(store.getState().nodes[0].data.properties.queueName).toBe('ORDERS.IN');
    expect(screen.queryByText('Queue name is required')).toBeNull();
    fireEvent.change(queue, { target: { value: 'has space' } });
    expect(screen.getByRole('alert').textContent).toMatch(/at most 48 characters/);

    const mode = screen.getByLabelText('Transaction mode') as HTMLSelectElement;
    expect([...mode.options].map((o) => o.value)).toEqual(['', 'yes', 'no', 'automatic']);
    fireEvent.change(mode, { target: { value: 'automatic' } });
    expect(store.getState().nodes[0].data.properties.transactionMode).toBe('automatic');

    const wait = screen.getByLabelText(/^Wait interval/) as HTMLInputElement;
    expect(wait.type).toBe('number');
    fireEvent.change(wait, { target: { value: '250' } });
    expect(store.getState().nodes[0].data.properties.waitInterval).toBe(250);
  });

  it('shows the flow properties when no node is focused', async () => {
    const store = renderPanel();
    expect(screen.queryByLabelText('Additional instances')).toBeNull();
    act(() => store.getState().focus(null));
    const instances = (await screen.findByLabelText('Additional instances')) as HTMLInputElement;
    fireEvent.change(instances, { target: { value: '3' } });
    expect(store.getState().meta.properties.additionalInstances).toBe(3);
  });

  it('makes every control read-only for a viewer', () => {
    renderPanel(true);
    expect((screen.getByLabelText(/Queue name/) as HTMLInputElement).readOnly).toBe(true);
    expect((screen.getByLabelText('Transaction mode') as HTMLSelectElement).disabled).toBe(true);
  });
});
